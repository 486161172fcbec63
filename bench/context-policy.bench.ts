/**
 * The context policy on a 40-step tool-heavy turn (each step calls a tool that returns about
 * 3,000 characters of JSON): the estimated prompt tokens of each step's model call with and
 * without the policy (the growth curve), and the time the policy adds to assembling each step's
 * prompt. Pure computation, no infrastructure:
 * `node --conditions=@keel/source --import tsx bench/context-policy.bench.ts`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ContextPolicy } from '@keel/events';
import type { PromptMessage } from '../services/agent/src/prompt/prompt.js';
import { applyContextPolicy, estimateTokens } from '../services/agent/src/turn/context-policy.js';

const STEPS = 40;
const RESULT_CHARS = 3_000;
const RUNS = 200;
const POLICY: ContextPolicy = { maxContextTokens: 8_000, keepToolResults: 3, heavyResultChars: 4_000 };
const RESULTS = fileURLToPath(new URL('./results/context-policy.md', import.meta.url));

/** A search result of about `chars` characters, as a webhook tool would return it. */
const result = (step: number, chars: number): string => {
  const items = [];
  for (let i = 0; JSON.stringify(items).length < chars; i++) {
    items.push({
      id: `page-${step}-${i}`,
      title: `Result ${i} of step ${step}`,
      snippet: 'lorem ipsum '.repeat(8),
    });
  }
  return JSON.stringify({ query: `step ${step}`, items });
};

/** The prompt of the model call after `steps` tool steps. */
const prompt = (steps: number, results: string[]): PromptMessage[] => {
  const messages: PromptMessage[] = [
    {
      role: 'system',
      content: '# Role\nYou are an assistant running on Keel.\n\n# Tools\n- search: searches pages',
    },
    { role: 'user', content: 'Find every page about pricing and summarise them.' },
  ];
  for (let step = 1; step <= steps; step++) {
    const id = `call-${step}`;
    messages.push({
      role: 'assistant',
      content: '',
      toolCalls: [{ id, name: 'search', args: { q: `pricing ${step}` } }],
    });
    messages.push({ role: 'tool', toolCallId: id, content: results[step - 1]! });
  }
  return messages;
};

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

const main = (): void => {
  const results = Array.from({ length: STEPS }, (_, i) => result(i + 1, RESULT_CHARS));
  const rows: string[] = [];
  const times: number[] = [];
  let totalWithout = 0;
  let totalWith = 0;
  for (let step = 0; step < STEPS; step++) {
    const messages = prompt(step, results);
    const without = estimateTokens(messages);
    const started = process.hrtime.bigint();
    let outcome = applyContextPolicy(messages, POLICY);
    for (let run = 1; run < RUNS; run++) outcome = applyContextPolicy(messages, POLICY);
    const micros = Number(process.hrtime.bigint() - started) / 1_000 / RUNS;
    times.push(micros);
    totalWithout += without;
    totalWith += outcome.contextTokens;
    if (step % 5 === 0 || step === STEPS - 1) {
      rows.push(
        `| ${step + 1} | ${without} | ${outcome.contextTokens} | ${outcome.stubbed.length} | ${micros.toFixed(1)} |`,
      );
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  const lines = [
    '# Context policy: prompt tokens per step of a 40-step tool-heavy turn',
    '',
    `Each step calls \`search\`, whose result is ~${RESULT_CHARS} characters of JSON; policy ${JSON.stringify(POLICY)}. Tokens are the policy's estimate (4 characters a token).`,
    '',
    '| model call | prompt tokens, no policy | prompt tokens, policy | results stubbed | policy µs/step |',
    '|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Whole turn: ${totalWithout} prompt tokens without the policy, ${totalWith} with it (${((1 - totalWith / totalWithout) * 100).toFixed(0)}% fewer). Policy time per step: p50 ${percentile(sorted, 0.5).toFixed(1)} µs, p99 ${percentile(sorted, 0.99).toFixed(1)} µs (${RUNS} runs a step, ${process.version}).`,
  ];
  writeFileSync(RESULTS, `${lines.join('\n')}\n`);
  console.log(lines.join('\n'));
};

main();
