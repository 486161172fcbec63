import type { EventData } from '@keel/core';

const TEXT =
  'Could you check the status of order 4711 and, if it has not shipped yet, change the delivery ' +
  'address to the one on file for my office? Also tell me whether the express option is still ' +
  'available for it, and what it would cost in euros including VAT. Thanks!';

/**
 * A conversation event of a typical size (about 500 bytes of JSON: a user message with its
 * token count, correlation and actor metadata), so store benchmarks write realistic documents.
 */
export const messageEvent = (conversationId: string, seq: number): EventData => ({
  type: 'MessageAdded',
  data: {
    conversationId,
    messageId: `m-${seq}`,
    role: seq % 2 === 0 ? 'user' : 'assistant',
    text: TEXT,
    tokens: { input: 75 + (seq % 13), output: 0 },
  },
  metadata: {
    correlationId: `corr-${conversationId}-${seq}`,
    causationId: `cause-${conversationId}-${seq}`,
    actor: { keyId: 'key_bench', role: 'member', userId: 'user-42' },
  },
});

/** `count` consecutive message events of one conversation, starting at `seq`. */
export const messageEvents = (conversationId: string, seq: number, count: number): EventData[] =>
  Array.from({ length: count }, (_, k) => messageEvent(conversationId, seq + k));
