import type { AgentIntent } from '@keel/events';

/** The intent a message was classified as, and how sure the classification is (0 to 1]. */
export interface Classified {
  intent: AgentIntent;
  confidence: number;
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** How many of `intent`'s keywords occur in `text` as whole words, case-insensitively. */
const hits = (text: string, intent: AgentIntent): number =>
  intent.keywords.filter((keyword) => new RegExp(`(^|\\W)${escape(keyword)}(\\W|$)`, 'i').test(text)).length;

/**
 * Classifies a user message by keywords before the loop: the intent with the most keyword hits
 * (ties: the first listed); its confidence is its share of all hits, so a message that only one
 * intent's words name is 1, one that two intents name equally is 0.5. No hit: undefined (all tools).
 */
export const classifyIntent = (
  text: string,
  intents: readonly AgentIntent[] | undefined,
): Classified | undefined => {
  const scored = (intents ?? []).map((intent) => ({ intent, hits: hits(text, intent) }));
  const total = scored.reduce((sum, s) => sum + s.hits, 0);
  if (total === 0) return undefined;
  const best = scored.reduce((a, b) => (b.hits > a.hits ? b : a));
  return { intent: best.intent, confidence: Math.round((best.hits / total) * 100) / 100 };
};

/** The tools offered under `classified`: its tools among the agent's, else all of them. */
export const narrowTools = <T extends { name: string }>(
  tools: readonly T[],
  classified: Classified | undefined,
): T[] => {
  const allowed = classified?.intent.tools;
  return allowed === undefined ? [...tools] : tools.filter((tool) => allowed.includes(tool.name));
};
