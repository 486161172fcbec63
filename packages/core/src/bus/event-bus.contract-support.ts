import type { RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import type { ConsumerOptions, Delivery, EventBus } from './event-bus.js';

/** One call of a recording consumer's handler. */
export interface Attempt {
  eventId: string;
  /** `<stream>:<version>`, for order assertions. */
  key: string;
  deliveryCount: number;
  replayOf: string | undefined;
  status: 'running' | 'ok' | 'failed';
  at: number;
}

export { sleep } from '../time/index.js';
/** A name unique to this run, for tenants and consumers. */
export const unique = (prefix: string): string => `${prefix}${globalThis.crypto.randomUUID().slice(0, 8)}`;

/** A recorded event as the store would hand it to the outbox. */
export const event = (
  tenantId: string,
  streamName: string,
  version: number,
  data: unknown = { n: version },
): RecordedEvent => ({
  eventId: uuidv7(),
  type: 'ContractChecked',
  data,
  metadata: { correlationId: 'corr-1', actor: { userId: 'u-1' } },
  tenantId,
  streamName,
  version,
  globalPosition: version,
  commitId: uuidv7(),
  recordedAt: new Date().toISOString(),
});

/** Starts a consumer that records every attempt; `behave` may throw to fail a delivery. */
export const recordingConsumer = async (
  bus: EventBus,
  options: ConsumerOptions,
  behave?: (d: Delivery) => Promise<void> | void,
) => {
  const attempts: Attempt[] = [];
  const deliveries: Delivery[] = [];
  const consumer = await bus.consume(options, async (delivery) => {
    const { event: e } = delivery;
    const attempt: Attempt = {
      eventId: e.eventId,
      key: `${e.streamName}:${e.version}`,
      deliveryCount: delivery.deliveryCount,
      replayOf: delivery.replayOf,
      status: 'running',
      at: Date.now(),
    };
    attempts.push(attempt);
    deliveries.push(delivery);
    try {
      await behave?.(delivery);
      attempt.status = 'ok';
    } catch (error) {
      attempt.status = 'failed';
      throw error;
    }
  });
  const handled = (eventId?: string): Attempt[] =>
    attempts.filter((a) => a.status === 'ok' && (eventId === undefined || a.eventId === eventId));
  const handledIds = (): string[] => handled().map((a) => a.eventId);
  const attemptsOf = (eventId: string): Attempt[] => attempts.filter((a) => a.eventId === eventId);
  return { consumer, attempts, deliveries, handled, handledIds, attemptsOf };
};
