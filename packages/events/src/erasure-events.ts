import type { EventData } from '@keel/core';

/**
 * The conversation was deleted (API `DELETE /v1/conversations/{id}`): every read answers 404 from
 * here on, and its data key is destroyed, so the content of its events (sealed with that key in
 * the log, snapshots and the bus) can never be read again. Its fields are ids and times only, kept
 * in clear (the sealing layer never seals this type): the audit trail shows who deleted it, when.
 */
export type ConversationDeleted = EventData<
  'ConversationDeleted',
  { conversationId: string; by: string; at: string }
>;

/** The type of the event that erases a conversation (the sealing layer's `erasureType`). */
export const CONVERSATION_DELETED = 'ConversationDeleted' satisfies ConversationDeleted['type'];
