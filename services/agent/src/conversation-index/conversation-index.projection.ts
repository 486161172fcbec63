import type { Consumer, Delivery, EventBus } from '@keel/core';
import { isEvent } from '@keel/core';
import type { ConversationCreated } from '@keel/events';
import { CONVERSATION_CATEGORY } from '@keel/events';
import type { ConversationIndex } from './conversation-index.js';

/** Durable name of the consumer that keeps the conversation index. */
export const CONVERSATION_INDEX_CONSUMER = 'agent-conversation-index';

/**
 * Keeps the conversation index from the log: records every `ConversationCreated` the bus
 * delivers. `ConversationService.create` records the same entry at once, but a process that dies
 * between its append and that write leaves only the event; this consumer catches up on it. Both
 * writes are the same insert-if-absent, so the order and the repetition do not matter.
 */
export class ConversationIndexProjection {
  #consumer: Consumer | undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly index: ConversationIndex,
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
    if (!isEvent<ConversationCreated>(event, 'ConversationCreated')) return;
    const { conversationId, agentId, title, createdAt } = event.data;
    await this.index.record({
      tenantId: event.tenantId,
      conversationId,
      agentId,
      ...(title ? { title } : {}),
      createdAt,
    });
  }
}
