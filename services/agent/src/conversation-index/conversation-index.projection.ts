import type { Consumer, Delivery, EventBus } from '@keel/core';
import { isEvent, parseStreamName } from '@keel/core';
import type { ConversationCreated } from '@keel/events';
import { CONVERSATION_CATEGORY, CONVERSATION_DELETED } from '@keel/events';
import type { ConversationIndex, IndexedConversation } from './conversation-index.js';

/** The conversation as the index keeps it, at a version (the conversation service's load). */
export type IndexEntryLoader = (
  tenantId: string,
  conversationId: string,
) => Promise<(IndexedConversation & { version: number }) | undefined>;

/** Events that never change what the index keeps (status, title, metadata): no load for them. */
const UNINDEXED = new Set([
  'ConversationCreated',
  'UserMessageAdded',
  'AssistantMessageCompleted',
  'UsageRecorded',
  'FeedbackGiven',
  'PhaseChanged',
  'ApprovalDecidedByPolicy',
]);

/** Durable name of the consumer that keeps the conversation index. */
export const CONVERSATION_INDEX_CONSUMER = 'agent-conversation-index';

/**
 * Keeps the conversation index from the log: records every `ConversationCreated` the bus
 * delivers. `ConversationService.create` records the same entry at once, but a process that dies
 * between its append and that write leaves only the event; this consumer catches up on it. Both
 * writes are the same insert-if-absent, so the order and the repetition do not matter.
 *
 * Every later event that may change the status, title or metadata sets the entry to the
 * conversation as loaded then, at its version (`update` keeps the latest version, so events
 * handled out of order or twice leave the newest state).
 */
export class ConversationIndexProjection {
  #consumer: Consumer | undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly index: ConversationIndex,
    private readonly load?: IndexEntryLoader,
  ) {}

  async start(): Promise<void> {
    this.#consumer = await this.bus.consume(
      {
        name: CONVERSATION_INDEX_CONSUMER,
        filter: { category: CONVERSATION_CATEGORY },
        // The insert is idempotent: no inbox needed, and entries may land in any order.
        idempotency: 'none',
        maxInFlight: 16,
      },
      (delivery) => this.onEvent(delivery),
    );
  }

  async stop(): Promise<void> {
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }

  private async onEvent({ event }: Delivery): Promise<void> {
    // Deleted: the entry goes (its title and metadata are the conversation's content).
    if (event.type === CONVERSATION_DELETED)
      return this.index.remove(event.tenantId, parseStreamName(event.streamName).id);
    if (!isEvent<ConversationCreated>(event, 'ConversationCreated')) {
      if (UNINDEXED.has(event.type) || !this.load) return;
      const entry = await this.load(event.tenantId, parseStreamName(event.streamName).id);
      if (entry) await this.index.update(entry);
      return;
    }
    const { conversationId, agentId, title, metadata, createdAt, userId } = event.data;
    await this.index.record({
      tenantId: event.tenantId,
      conversationId,
      agentId,
      ...(title ? { title } : {}),
      createdAt,
      ...(userId ? { userId } : {}),
      ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
      status: 'idle',
    });
  }
}
