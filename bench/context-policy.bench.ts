/**
 * The context policy on a 40-step tool-heavy turn (each step calls a tool that returns about
 * 3,000 characters of JSON): the estimated prompt tokens of each step's model call with and
 * without the policy (the growth curve), and the time the policy adds to assembling each step's
 * prompt. Pure computation, no infrastructure:
 * `npm run bench -- context-policy`, or directly
 * `node --conditions=@keel/source --import tsx bench/context-policy.bench.ts`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ContextPolicy } from '@keel/events';
import type { PromptMessage } from '../services/agent/src/prompt/prompt.js';
import { applyContextPolicy, estimateTokens } from '../services/agent/src/turn/context-policy.js';
import type { Bench, BenchReport } from './lib/report.js';

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

/** What one run measured: the per-step rows, the policy's time per step (µs), the turn's totals. */
interface Measured {
  rows: string[];
  times: number[];
  totalWithout: number;
  totalWith: number;
}

const measure = (): Measured => {
  const results = Array.from({ length: STEPS }, (_, i) => result(i + 1, RESULT_CHARS));
  const measured: Measured = { rows: [], times: [], totalWithout: 0, totalWith: 0 };
  for (let step = 0; step < STEPS; step++) {
    const messages = prompt(step, results);
    const without = estimateTokens(messages);
    const started = process.hrtime.bigint();
    let outcome = applyContextPolicy(messages, POLICY);
    for (let run = 1; run < RUNS; run++) outcome = applyContextPolicy(messages, POLICY);
    const micros = Number(process.hrtime.bigint() - started) / 1_000 / RUNS;
    measured.times.push(micros);
    measured.totalWithout += without;
    measured.totalWith += outcome.contextTokens;
    if (step % 5 === 0 || step === STEPS - 1) {
      measured.rows.push(
        `| ${step + 1} | ${without} | ${outcome.contextTokens} | ${outcome.stubbed.length} | ${micros.toFixed(1)} |`,
      );
    }
  }
  return measured;
};

/** Measures, writes `bench/results/context-policy.md` and returns its lines. */
const report = (): { measured: Measured; lines: string[]; p50: number; p99: number } => {
  const measured = measure();
  const { rows, times, totalWithout, totalWith } = measured;
  const sorted = [...times].sort((a, b) => a - b);
  const [p50, p99] = [percentile(sorted, 0.5), percentile(sorted, 0.99)];
  const lines = [
    '# Context policy: prompt tokens per step of a 40-step tool-heavy turn',
    '',
    `Each step calls \`search\`, whose result is ~${RESULT_CHARS} characters of JSON; policy ${JSON.stringify(POLICY)}. Tokens are the policy's estimate (4 characters a token).`,
    '',
    '| model call | prompt tokens, no policy | prompt tokens, policy | results stubbed | policy µs/step |',
    '|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Whole turn: ${totalWithout} prompt tokens without the policy, ${totalWith} with it (${((1 - totalWith / totalWithout) * 100).toFixed(0)}% fewer). Policy time per step: p50 ${p50.toFixed(1)} µs, p99 ${p99.toFixed(1)} µs (${RUNS} runs a step, ${process.version}).`,
  ];
  writeFileSync(RESULTS, `${lines.join('\n')}\n`);
  return { measured, lines, p50, p99 };
};

/** `npm run bench -- context-policy`: pure computation (the infrastructure goes unused). */
export const contextPolicyBench: Bench = {
  name: 'context-policy',
  needsNats: false,
  run: async (): Promise<BenchReport> => {
    const { measured, p50, p99 } = report();
    return {
      name: 'context-policy',
      title: 'Context policy: prompt assembly per step of a 40-step tool-heavy turn',
      description: [
        `Each step's result is ~${RESULT_CHARS} characters of JSON; policy ${JSON.stringify(POLICY)}.`,
        'The growth curve (prompt tokens per model call, with and without the policy) is in bench/results/context-policy.md.',
      ],
      rows: [
        {
          scenario: 'policy applied to one step prompt',
          variant: 'keel',
          n: STEPS * RUNS,
          p50Ms: p50 / 1_000,
          p99Ms: p99 / 1_000,
        },
      ],
      notes: [
        `Whole turn: ${measured.totalWithout} prompt tokens without the policy, ${measured.totalWith} with it.`,
      ],
    };
  },
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(report().lines.join('\n'));
}
