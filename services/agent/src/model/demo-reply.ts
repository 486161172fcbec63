/** A message as the demo model reads it. */
export interface DemoMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | 'other';
  text: string;
  /** For assistant messages: the tools it called. */
  toolCalls?: Array<{ id: string; name: string }>;
  /** For tool messages: the call answered, and the tool's name when the message carries it. */
  toolCallId?: string;
  name?: string;
}

/** What the demo model answers: text, or one tool call. */
export type DemoReply =
  { kind: 'text'; text: string } | { kind: 'tool_call'; name: string; args: Record<string, unknown> };

/** Every text answer of the demo model starts with this, so nobody mistakes it for a real model. */
export const DEMO_PREFIX = '[demo] ';

const TIME_QUESTION = /\b(time|clock|heures?)\b/i;
const IANA_ZONE =
  /\b(UTC|[A-Z][A-Za-z]+(?:[_-][A-Za-z]+)*\/[A-Z][A-Za-z]+(?:[_-][A-Za-z]+)*(?:\/[A-Z][A-Za-z_]+)?)\b/;
const CITY_ZONES: Array<[RegExp, string]> = [
  [/\btokyo\b/i, 'Asia/Tokyo'],
  [/\bparis\b/i, 'Europe/Paris'],
  [/\blondon\b/i, 'Europe/London'],
  [/\bberlin\b/i, 'Europe/Berlin'],
  [/\bnew york\b/i, 'America/New_York'],
  [/\b(los angeles|san francisco)\b/i, 'America/Los_Angeles'],
  [/\bsydney\b/i, 'Australia/Sydney'],
  [/\b(mumbai|delhi)\b/i, 'Asia/Kolkata'],
  [/\bsingapore\b/i, 'Asia/Singapore'],
];
/** Runs of digits, operators, parentheses and spaces: the candidates for an arithmetic expression. */
const EXPRESSION_CANDIDATE = /[-+(]*\s*[\d.][\d.\s()+\-*/%^]*/g;
const BINARY_OPERATION = /[\d.)]\s*(\*\*|[-+*/%^])\s*[-+(]*\s*[\d.]/;
const MAX_TOOL_RESULT_CHARS = 500;

/**
 * The demo model's deterministic answer. After tool results it reports them; a bound tool's name
 * followed by a JSON object (`refund {"order": "A-1"}`) calls that tool with it; a question about
 * the time calls `current_time`, an arithmetic expression calls `calculator` (when bound);
 * anything else is echoed.
 */
export const demoReply = (messages: DemoMessage[], tools: string[]): DemoReply => {
  const toolResults = trailingToolResults(messages);
  if (toolResults.length > 0) {
    const sentences = toolResults.map(({ name, text }) => `${name} says: ${clip(text)}`);
    return { kind: 'text', text: `${DEMO_PREFIX}${sentences.join(' ')}` };
  }
  const said = messages.findLast((m) => m.role === 'user')?.text.trim() ?? '';
  const named = namedToolCall(said, tools);
  if (named !== undefined) return named;
  if (tools.includes('current_time') && TIME_QUESTION.test(said)) {
    const timezone = zoneIn(said);
    return { kind: 'tool_call', name: 'current_time', args: timezone === undefined ? {} : { timezone } };
  }
  const expression = tools.includes('calculator') ? expressionIn(said) : undefined;
  if (expression !== undefined) return { kind: 'tool_call', name: 'calculator', args: { expression } };
  return { kind: 'text', text: `${DEMO_PREFIX}You said: ${said || '(nothing)'}` };
};

/** The tool messages that end the conversation, each with the name of the tool that answered. */
const trailingToolResults = (messages: DemoMessage[]): Array<{ name: string; text: string }> => {
  let start = messages.length;
  while (start > 0 && messages[start - 1]?.role === 'tool') start--;
  const calls = new Map<string, string>();
  for (const message of messages.slice(0, start)) {
    for (const call of message.toolCalls ?? []) calls.set(call.id, call.name);
  }
  return messages.slice(start).map((message) => ({
    name: message.name || calls.get(message.toolCallId ?? '') || 'the tool',
    text: message.text,
  }));
};

/** `<tool> {json object}` in the user's text, for a bound tool: the demo's way to call any tool. */
const namedToolCall = (text: string, tools: string[]): DemoReply | undefined => {
  for (const name of tools) {
    const at = new RegExp(`(?:^|[^\\w-])${name.replace(/[-]/g, '\\-')}\\s*(\\{.*\\})`, 's').exec(text);
    if (at?.[1] === undefined) continue;
    try {
      const args: unknown = JSON.parse(at[1]);
      if (typeof args === 'object' && args !== null && !Array.isArray(args)) {
        return { kind: 'tool_call', name, args: args as Record<string, unknown> };
      }
    } catch {
      // Not JSON: not a call.
    }
  }
  return undefined;
};

const zoneIn = (text: string): string | undefined => {
  const iana = IANA_ZONE.exec(text)?.[1];
  if (iana !== undefined) return iana;
  return CITY_ZONES.find(([city]) => city.test(text))?.[1];
};

/** The longest run of digits and operators holding at least one binary operation, e.g. `2+3*4`. */
const expressionIn = (text: string): string | undefined => {
  let best: string | undefined;
  for (const match of text.matchAll(EXPRESSION_CANDIDATE)) {
    const candidate = match[0].trim().replace(/[-+*/%^(.\s]+$/, '');
    if (BINARY_OPERATION.test(candidate) && candidate.length > (best?.length ?? 0)) best = candidate;
  }
  return best;
};

const clip = (text: string): string =>
  text.length <= MAX_TOOL_RESULT_CHARS ? text : `${text.slice(0, MAX_TOOL_RESULT_CHARS)}…`;

/** Splits text into words that keep their trailing spaces, so the pieces join back to the text. */
export const wordsOf = (text: string): string[] => text.split(/(?<=\s)(?=\S)/).filter((w) => w !== '');

/** The demo's token estimate: a token per four characters, rounded up. */
export const estimateTokens = (chars: number): number => Math.ceil(chars / 4);
