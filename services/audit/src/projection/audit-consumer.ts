import type { Consumer, EventBus } from '@keel/core';
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
    private readonly options: { ackWaitMs?: number } = {},
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
      (delivery) => this.projector.catchUp(delivery.event.globalPosition, () => delivery.working()),
    );
  }

  async stop(): Promise<void> {
    await this.#consumer?.stop();
    this.#consumer = undefined;
  }
}
