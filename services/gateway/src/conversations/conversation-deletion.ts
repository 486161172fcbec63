import type { EventMetadata, RecordedEvent } from '@keel/core';
import { NotFoundError } from '@keel/core';
import type { ConversationDeleted } from '@keel/events';
import { CONVERSATION_DELETED, RUN_ID_METADATA_KEY } from '@keel/events';

/** A DELETE as the decision sees it: which conversation, by whom, when. */
export interface DeleteConversation {
  conversationId: string;
  by: string;
  at: string;
  metadata: EventMetadata;
}

/** What to append: the deletion, expecting the stream at the version it was decided on. */
export interface DeletionDecision {
  expectedVersion: number;
  event: ConversationDeleted;
}

/**
 * Decides a DELETE from the conversation's events, as read (the tenant's stream only): a stream
 * with no `ConversationCreated` (never created, another tenant's, or erased) or one already
 * deleted is not found (so a second DELETE is 404); otherwise the deletion, expecting the
 * stream's last version, so a turn appending meanwhile makes the append retry on the new state.
 * Pure: the eraser does the reading, appending and key destruction.
 */
export const decideDeletion = (
  events: readonly RecordedEvent[],
  command: DeleteConversation,
): DeletionDecision => {
  const created = events.some((event) => event.type === 'ConversationCreated');
  const deleted = events.some((event) => event.type === CONVERSATION_DELETED);
  if (!created || deleted) throw new NotFoundError(`conversation ${command.conversationId} not found`);
  return {
    expectedVersion: events.at(-1)?.version ?? 0,
    event: {
      type: 'ConversationDeleted',
      data: { conversationId: command.conversationId, by: command.by, at: command.at },
      metadata: command.metadata,
    },
  };
};

/**
 * The child conversations a conversation's sub-agent calls ran (`childConversationId`, an id kept
 * in clear): deleting a conversation deletes them too, since each holds the task the parent's
 * call gave it (the call's arguments).
 */
export const childConversationsOf = (events: readonly RecordedEvent[]): string[] => {
  const children = new Set<string>();
  for (const { data } of events) {
    if (typeof data !== 'object' || data === null || !('childConversationId' in data)) continue;
    const child = (data as { childConversationId?: unknown }).childConversationId;
    if (typeof child === 'string' && child !== '') children.add(child);
  }
  return [...children];
};

/**
 * The team run a conversation is a task of (its creation's metadata names it), if any: the run's
 * stream holds copies of the conversation's content (the task's input and output, the run's
 * output), so deleting the conversation erases the run's stream too.
 */
export const runOfConversation = (events: readonly RecordedEvent[]): string | undefined => {
  const created = events.find((event) => event.type === 'ConversationCreated');
  const metadata = (created?.data as { metadata?: unknown } | undefined)?.metadata;
  if (typeof metadata !== 'object' || metadata === null) return undefined;
  const runId = (metadata as Record<string, unknown>)[RUN_ID_METADATA_KEY];
  return typeof runId === 'string' && runId !== '' ? runId : undefined;
};
