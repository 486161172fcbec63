import type { Consumer, Delivery, EventBus, EventStore, OutboxRelay } from '@keel/core';
import { sleep } from '@keel/core';
import type { AuditProjector } from './audit-projector.js';

/** Durable name of the audit service's consumer of every event. */
export const AUDIT_CONSUMER = 'audit-projection';

/**
 * The audit service's durable consumer of every event of every tenant and category. The bus
 * runs its handler once at a time across all instances (maxInFlight 1), which makes the
 * projector a single writer; each delivery is acked once the log up to that event is durably
 * projected. The projector reads the log itself, a page at a time, so an event delivered after
 * its page was applied is acked at once: many events cost one write per rollup document.
 */
export class AuditConsumer {
  #consumer: Consumer | undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly projector: AuditProjector,
    private readonly options: {
      ackWaitMs?: number;
      /** Where an event published before it was placed in the global log finds its position. */
      store?: Pick<EventStore, 'read'>;
      /**
       * Where such an event's position is told without a query: the pages this process's relay
       * placed or heard of from the other processes' (see OutboxRelay.positionOf).
       */
      placed?: Pick<OutboxRelay, 'positionOf' | 'placedCount' | 'waitForPlaced'>;
      /**
       * Pause between two reads of the log for such an event's position. Default 20 ms, or
       * 250 ms with `placed` (the position is normally told first; the read covers a lost notice).
       */
      placedPollMs?: number;
      /**
       * How long a delivery the projection has not reached waits before catching up, so that the
       * events committed meanwhile are projected with it: one write per rollup document and one
       * checkpoint for them all instead of one per event. Default 200 ms (how stale usage may be).
       */
      batchMs?: number;
    } = {},
  ) {}

  async start(): Promise<void> {
    this.#consumer = await this.bus.consume(
      {
        name: AUDIT_CONSUMER,
        // The projector is idempotent by log position: no inbox.
        idempotency: 'none',
        maxInFlight: 1,
        ...(this.options.ackWaitMs === undefined ? {} : { ackWaitMs: this.options.ackWaitMs }),
      },
      async (delivery) => {
        const target = await this.targetOf(delivery);
        if (target === undefined || target > this.projector.stats.position) {
          await sleep(this.options.batchMs ?? 200);
        }
        await this.projector.catchUp(target, () => delivery.working());
      },
    );
  }

  /**
   * The global position the projection must reach before this delivery is acked. An event the
   * outbox's fast path published before the sequencer placed it carries none: its position is
   * known if the projector applied it lately, or told by the page's placer (no query), or else
   * read from the log at most every `placedPollMs`, waiting (alive) until it is placed. Acking it after a catch-up to the end of
   * the log as read now could miss it, and the relay's later publish of it is deduplicated, so
   * nothing would ever bring the projection to it.
   */
  private async targetOf(delivery: Delivery): Promise<number | undefined> {
    const { event } = delivery;
    const { store, placed } = this.options;
    if (event.globalPosition !== undefined || !store) return event.globalPosition;
    const pollMs = this.options.placedPollMs ?? (placed ? 250 : 20);
    // With notices, the first read waits a poll for the page to be told: it usually is by then.
    let readAt = placed ? Date.now() : Number.NEGATIVE_INFINITY;
    for (;;) {
      const since = placed?.placedCount;
      const told = this.projector.positionOf(event.eventId) ?? placed?.positionOf(event.eventId);
      if (told !== undefined) return told;
      if (Date.now() - readAt >= pollMs) {
        readAt = Date.now();
        const [stored] = await store.read(event.tenantId, event.streamName, {
          fromVersion: event.version,
          toVersion: event.version,
        });
        if (!stored) return undefined; // not in this log (another store's stream): nothing to wait for
        if (stored.globalPosition !== undefined) return stored.globalPosition;
      }
      delivery.working();
      const wait = Math.max(1, readAt + pollMs - Date.now());
      await (placed ? placed.waitForPlaced(wait, since) : sleep(wait));
    }
  }

  async stop(): Promise<void> {
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }
}
