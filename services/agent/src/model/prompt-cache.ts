import type { PromptMessage } from '../prompt/prompt.js';
import {
  INTENT_SECTION,
  KNOWN_ENTITIES_SECTION,
  MESSAGE_CONTEXT_SECTION,
  STATE_SECTION,
} from '../prompt/prompt.js';

/** A text block of a message's content, with an explicit cache breakpoint when `cached`. */
export interface CacheTextBlock {
  type: 'text';
  text: string;
  cache_control?: { type: 'ephemeral' };
  /** LangChain's content blocks are open records. */
  [key: string]: unknown;
}

/** The system prompt split at its stable prefix: the prefix (a breakpoint after it), then the per-conversation rest. */
export const systemBlocks = (system: string): CacheTextBlock[] => {
  // The first per-conversation section (state, known entities) ends the stable prefix.
  const cuts = [STATE_SECTION, KNOWN_ENTITIES_SECTION, INTENT_SECTION, MESSAGE_CONTEXT_SECTION]
    .map((s) => system.indexOf(s))
    .filter((i) => i >= 0);
  const cut = cuts.length === 0 ? -1 : Math.min(...cuts);
  const stable = cut < 0 ? system : system.slice(0, cut);
  const rest = cut < 0 ? '' : system.slice(cut);
  return [
    { type: 'text', text: stable, cache_control: { type: 'ephemeral' } },
    ...(rest === '' ? [] : [{ type: 'text' as const, text: rest }]),
  ];
};

/**
 * Where the explicit cache breakpoints of a prompt go (Anthropic `cache_control`, at most four):
 * after the system prompt's stable prefix (tools, role, rules, instructions: the same for every
 * call of the agent), and after the prompt's last message, so the next step of the turn reads the
 * whole conversation so far from the cache. The index of that last message, or -1 when it is the
 * system prompt itself.
 */
export const lastMessageBreakpoint = (messages: readonly PromptMessage[]): number =>
  messages.length > 1 && messages.at(-1)!.content !== '' ? messages.length - 1 : -1;
