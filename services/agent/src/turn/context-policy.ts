import type { ContextPolicy } from '@keel/events';
import type { PromptMessage } from '../prompt/prompt.js';

/** An older tool result longer than this is stubbed when the policy does not say (API.md). */
export const DEFAULT_HEAVY_RESULT_CHARS = 4000;

/** Characters per token of the estimate (English text and JSON average about four). */
const CHARS_PER_TOKEN = 4;

/** A rough token count of one message: its text and its tool calls' arguments, at four characters a token. */
const messageTokens = (message: PromptMessage): number => {
  const calls = message.role === 'assistant' && message.toolCalls ? JSON.stringify(message.toolCalls) : '';
  return Math.ceil((message.content.length + calls.length) / CHARS_PER_TOKEN) + 4;
};

/** The estimated prompt tokens of `messages` (the tools' schemas not counted). */
export const estimateTokens = (messages: readonly PromptMessage[]): number =>
  messages.reduce((sum, message) => sum + messageTokens(message), 0);

/** The one line that stands in the prompt for a tool result left out. */
export const toolResultStub = (toolCallId: string, name: string, chars: number): string =>
  `[tool result of ${name} (call ${toolCallId}) left out of the prompt: ${chars} characters, kept in the conversation log]`;

/** What the policy made of a prompt. */
export interface PolicyOutcome {
  messages: PromptMessage[];
  /** The tool call ids whose results were stubbed, oldest first. */
  stubbed: string[];
  /** The estimated tokens of `messages`. */
  contextTokens: number;
}

/**
 * The prompt the model is sent under an agent's context policy. Invariants: only tool results are
 * changed, each into a one-line stub naming its tool call; the results of the latest step (after
 * the last assistant message) are never stubbed, since the model is about to read them; every
 * other message stays as it is, in order. Older results beyond the last `keepToolResults`, and
 * older ones over `heavyResultChars`, are stubbed; then, while the estimate is over
 * `maxContextTokens`, the oldest full results are stubbed too. No policy: the messages unchanged.
 */
export const applyContextPolicy = (
  messages: readonly PromptMessage[],
  policy: ContextPolicy | undefined,
): PolicyOutcome => {
  if (!policy) return { messages: [...messages], stubbed: [], contextTokens: estimateTokens(messages) };
  const names = toolNames(messages);
  const older = olderResultIndexes(messages);
  const heavy = policy.heavyResultChars ?? DEFAULT_HEAVY_RESULT_CHARS;
  const keep = policy.keepToolResults ?? Number.POSITIVE_INFINITY;
  const allResults = messages.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
  const kept = new Set(allResults.slice(Math.max(0, allResults.length - keep)));
  const out = [...messages];
  const stubbed = new Set<number>();
  const stub = (index: number): void => {
    const message = out[index] as Extract<PromptMessage, { role: 'tool' }>;
    const name = names.get(message.toolCallId) ?? 'a tool';
    out[index] = { ...message, content: toolResultStub(message.toolCallId, name, message.content.length) };
    stubbed.add(index);
  };
  for (const index of older) {
    const content = (messages[index] as { content: string }).content;
    if (!kept.has(index) || content.length > heavy) stub(index);
  }
  let tokens = estimateTokens(out);
  for (const index of older) {
    if (policy.maxContextTokens === undefined || tokens <= policy.maxContextTokens) break;
    if (stubbed.has(index)) continue;
    const before = messageTokens(out[index]!);
    stub(index);
    tokens += messageTokens(out[index]!) - before;
  }
  const ids = [...stubbed].sort((a, b) => a - b).map((i) => (out[i] as { toolCallId: string }).toolCallId);
  return { messages: out, stubbed: ids, contextTokens: tokens };
};

/** The tool's name of each tool call id, from the assistant messages that made the calls. */
const toolNames = (messages: readonly PromptMessage[]): Map<string, string> => {
  const names = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) names.set(call.id, call.name);
  }
  return names;
};

/** Indexes of the tool results before the last assistant message, oldest first. */
const olderResultIndexes = (messages: readonly PromptMessage[]): number[] => {
  let lastAssistant = -1;
  messages.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  return messages.flatMap((m, i) => (m.role === 'tool' && i < lastAssistant ? [i] : []));
};
