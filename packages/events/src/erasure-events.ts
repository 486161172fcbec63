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

/**
 * A team run's stream was erased because a member conversation of it (`conversationId`, a task's
 * conversation) was deleted: the run's stream holds copies of that conversation's content (the
 * task's input and output, the run's output), so its data key is destroyed too, and the run reads
 * as never started (404) from then on. Ids and times only, never sealed (like ConversationDeleted).
 */
export type RunErased = EventData<
  'RunErased',
  { runId: string; conversationId: string; by: string; at: string }
>;

/** The type of the event that erases a run's stream (an `erasureType` of the sealing layer). */
export const RUN_ERASED = 'RunErased' satisfies RunErased['type'];

/**
 * The metadata key of a task's conversation (its ConversationCreated) that names its run: the
 * agent's run manager writes it (its RUN_ID_KEY), the gateway's eraser reads it.
 */
export const RUN_ID_METADATA_KEY = 'keel_run_id';
