import type { Consumer, Delivery, EventBus } from '@keel/core';
import { isEvent, parseStreamName } from '@keel/core';
import type { ConversationCreated } from '@keel/events';
import { CONVERSATION_CATEGORY, CONVERSATION_DELETED } from '@keel/events';
import type { ConversationIndex, IndexedConversation } from './conversation-index.js';
import { indexKey } from './conversation-index.js';

/** An index entry at the conversation version it reflects. */
export type VersionedEntry = IndexedConversation & { version: number };

/** Where the projection gets a conversation's entry (the conversation service's state). */
export interface IndexEntrySource {
  /**
   * The entry at `version` or a later one, when this process holds the conversation there (it
   * wrote or read it last): no read. Undefined otherwise. A later version is as good: the entry
   * reflects the event, and `update` keeps the latest.
   */
  remembered(tenantId: string, conversationId: string, version: number): VersionedEntry | undefined;
  /** The entry at the conversation's latest version (a read of the log); undefined if it does not exist. */
  load(tenantId: string, conversationId: string): Promise<VersionedEntry | undefined>;
}

/** Events that never change what the index keeps (status, title, metadata): nothing to do for them. */
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
 * How long an entry's write waits for later events of its conversation (one write for all of
 * them): a quick turn's events (started, tool calls, completed) are usually one write, made after
 * it. A list's status filter sees a change this much later.
 */
export const DEFAULT_INDEX_WRITE_DELAY_MS = 250;

/**
 * Deliveries the index consumer holds at once (each waits at most the write delay plus one
 * write): about 1,000 indexed events a second across conversations at the default delay.
 */
const INDEX_DELIVERIES_IN_FLIGHT = 256;

/** A conversation's entry waiting for its write, and the deliveries acknowledged once it is written. */
interface PendingWrite {
  /** The latest version of the conversation its events reached: the entry written reflects it at least. */
  version: number;
  written: Promise<void>;
  /** Ends the wait now (the projection stops). */
  now(): void;
}

/**
 * Keeps the conversation index from the log: records every `ConversationCreated` the bus
 * delivers. `ConversationService.create` records the same entry at once, but a process that dies
 * between its append and that write leaves only the event; this consumer catches up on it. Both
 * writes are the same insert-if-absent, so the order and the repetition do not matter.
 *
 * Every later event that may change the status, title or metadata sets the entry to the
 * conversation at that event's version or a later one (`update` keeps the latest version, so
 * events handled out of order or twice leave the newest state). Those writes are off a turn's
 * path: an event's write waits `writeDelayMs` for the conversation's next events, and one write
 * then covers them all. The entry is taken when it is written: from the state this process holds
 * when that includes the events (the common case: it wrote them), else from a read (an event
 * another process wrote is seen through it). A delivery is acknowledged only after the write that
 * covers it, so a crash before it loses nothing (the event is delivered again). The index lags
 * the log by about `writeDelayMs`.
 */
export class ConversationIndexProjection {
  #consumer: Consumer | undefined;
  readonly #pending = new Map<string, PendingWrite>();
  #writeDelayMs: number;

  constructor(
    private readonly bus: EventBus,
    private readonly index: ConversationIndex,
    private readonly source?: IndexEntrySource,
    options: { writeDelayMs?: number } = {},
  ) {
    this.#writeDelayMs = options.writeDelayMs ?? DEFAULT_INDEX_WRITE_DELAY_MS;
  }

  async start(): Promise<void> {
    this.#consumer = await this.bus.consume(
      {
        name: CONVERSATION_INDEX_CONSUMER,
        filter: { category: CONVERSATION_CATEGORY },
        // The insert is idempotent: no inbox needed, and entries may land in any order.
        idempotency: 'none',
        // Most deliveries in flight only wait for their conversation's delayed write (a timer,
        // not a connection): enough of them that the wait does not cap the events handled per second.
        maxInFlight: INDEX_DELIVERIES_IN_FLIGHT,
      },
      (delivery) => this.onEvent(delivery),
    );
  }

  /** Stops taking events; the writes waiting for their delay are made at once. */
  async stop(): Promise<void> {
    this.#writeDelayMs = 0;
    for (const pending of this.#pending.values()) pending.now();
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }

  private async onEvent({ event }: Delivery): Promise<void> {
    const conversationId = parseStreamName(event.streamName).id;
    // Deleted: the entry goes (its title and metadata are the conversation's content).
    if (event.type === CONVERSATION_DELETED) return this.index.remove(event.tenantId, conversationId);
    if (!isEvent<ConversationCreated>(event, 'ConversationCreated')) {
      const { source } = this;
      if (UNINDEXED.has(event.type) || !source) return;
      return this.writeLater(source, event.tenantId, conversationId, event.version);
    }
    const { agentId, title, metadata, createdAt, userId } = event.data;
    await this.index.record({
      tenantId: event.tenantId,
      conversationId: event.data.conversationId,
      agentId,
      ...(title ? { title } : {}),
      createdAt,
      ...(userId ? { userId } : {}),
      ...(metadata && Object.keys(metadata).length > 0 ? { metadata } : {}),
      status: 'idle',
    });
  }

  /**
   * Writes the conversation's entry, at `version` or later, once the delay has passed: the write
   * already waiting for the conversation covers this event too.
   */
  private writeLater(
    source: IndexEntrySource,
    tenantId: string,
    conversationId: string,
    version: number,
  ): Promise<void> {
    const key = indexKey(tenantId, conversationId);
    const waiting = this.#pending.get(key);
    if (waiting) {
      waiting.version = Math.max(waiting.version, version);
      return waiting.written;
    }
    let now = (): void => undefined;
    const delay = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#writeDelayMs);
      now = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    const pending: PendingWrite = {
      version,
      now,
      written: delay.then(async () => {
        this.#pending.delete(key);
        const entry =
          source.remembered(tenantId, conversationId, pending.version) ??
          (await source.load(tenantId, conversationId));
        if (entry) await this.index.update(entry);
      }),
    };
    this.#pending.set(key, pending);
    return pending.written;
  }
}
