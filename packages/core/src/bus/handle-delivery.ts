import type { RecordedEvent } from '../typing/index.js';
import { uuidv7 } from '../typing/index.js';
import type { LogPort } from '../logging/index.js';
import { messageOf } from '../errors/index.js';
import type { ConsumerSettings } from './consumer-settings.js';
import { backoffDelay } from './consumer-settings.js';
import type { DeadLetterStore, DeliveryObserver, DeliveryOutcome, EventHandler, Inbox } from './event-bus.js';

/** One delivered message as an adapter sees it: the event plus the acknowledgement verbs. */
export interface BusMessage {
  event: RecordedEvent;
  deliveryCount: number;
  /** Set on a dead-letter replay: only this consumer handles it, every other one acks it. */
  replayFor?: string;
  replayOf?: string;
  working(): void;
  ack(): void;
  nak(delayMs: number): void;
  term(): void;
}

/** What a consumer instance handles its messages with. */
export interface DeliveryContext {
  settings: ConsumerSettings;
  handler: EventHandler;
  inbox: Inbox;
  /**
   * The bus's publish deduplication window (JetStream's `duplicate_window`): an event id is
   * stored once within it. Without it every delivery asks the inbox (see `mayBeHandled`).
   */
  duplicateWindowMs?: number;
  deadLetters: DeadLetterStore;
  logger: Pick<LogPort, 'warn' | 'error'>;
  /** Told about each delivery's outcome (metrics). */
  observe?: DeliveryObserver;
}

/**
 * The delivery rules (see `settle`), and the observer told what became of the delivery and how
 * long it took. Never throws.
 */
export const handleDelivery = async (
  message: BusMessage,
  context: DeliveryContext,
): Promise<DeliveryOutcome> => {
  const startedAt = performance.now();
  const outcome = await settle(message, context);
  try {
    context.observe?.({
      consumer: context.settings.name,
      outcome,
      deliveryCount: message.deliveryCount,
      seconds: (performance.now() - startedAt) / 1000,
    });
  } catch {
    // An observer's fault never changes a delivery.
  }
  return outcome;
};

export type { DeliveryOutcome } from './event-bus.js';

/**
 * The delivery rules both adapters share: replay targeting, inbox check, automatic `working()`,
 * backoff on failure, and the dead letter on the last allowed delivery. Never throws.
 */
const settle = async (message: BusMessage, context: DeliveryContext): Promise<DeliveryOutcome> => {
  const { settings, inbox, deadLetters } = context;
  const { event } = message;
  if (message.replayFor !== undefined && message.replayFor !== settings.name) {
    message.ack();
    return 'skipped';
  }
  if (message.deliveryCount > settings.maxDeliver) {
    // The last allowed attempt left no outcome: its process died, or its dead letter was not stored.
    const error = `delivery ${message.deliveryCount} is past maxDeliver ${settings.maxDeliver}: the last attempt left no outcome`;
    return deadLetter(message, context, error);
  }
  let failure: unknown;
  try {
    if (
      settings.idempotency === 'inbox' &&
      mayBeHandled(message, context.duplicateWindowMs) &&
      (await inbox.has(settings.name, event.eventId))
    ) {
      if (message.replayOf !== undefined)
        await deadLetters.markReplayed(message.replayOf, new Date().toISOString());
      message.ack();
      return 'skipped';
    }
    await runKeepingAlive(message, settings.ackWaitMs, context.handler);
    if (settings.idempotency === 'inbox') await inbox.record(settings.name, event.eventId);
    if (message.replayOf !== undefined)
      await deadLetters.markReplayed(message.replayOf, new Date().toISOString());
    message.ack();
    return 'handled';
  } catch (error) {
    failure = error;
  }
  const fields = {
    consumer: settings.name,
    eventId: event.eventId,
    deliveryCount: message.deliveryCount,
    err: failure,
  };
  if (message.deliveryCount >= settings.maxDeliver) return deadLetter(message, context, messageOf(failure));
  context.logger.warn(fields, 'event handler failed; will redeliver');
  message.nak(backoffDelay(settings.backoffMs, message.deliveryCount));
  return 'retry';
};

/**
 * Whether the consumer may have handled this event already, so its inbox must be asked: a
 * redelivery, a replay, or an event recorded at least half the duplicate window ago. The first
 * delivery of a younger event cannot be of a handled one, so it costs one inbox write (after the
 * handler) and no read. Why: the bus stores an event id once within its duplicate window, so a
 * second copy of an event (an outbox relay publishing again after a long outage) is stored at
 * least a window after the first, which was stored after the event was recorded; and a durable
 * delivers each stored copy first with `deliveryCount` 1 only once (Keel never deletes or
 * recreates a durable; an operator who does makes its recent events count as new). Half the window
 * is left for clocks that disagree (the writer's `recordedAt`, this process's now).
 */
export const mayBeHandled = (
  message: Pick<BusMessage, 'event' | 'deliveryCount' | 'replayOf'>,
  duplicateWindowMs: number | undefined,
  now: number = Date.now(),
): boolean => {
  if (message.deliveryCount > 1 || message.replayOf !== undefined || duplicateWindowMs === undefined)
    return true;
  const recordedAt = Date.parse(message.event.recordedAt);
  return !Number.isFinite(recordedAt) || now - recordedAt >= duplicateWindowMs / 2;
};

/** Runs the handler, telling the bus it is alive every half ack wait so it is not redelivered. */
const runKeepingAlive = async (
  message: BusMessage,
  ackWaitMs: number,
  handler: EventHandler,
): Promise<void> => {
  const timer = setInterval(() => message.working(), Math.max(50, Math.floor(ackWaitMs / 2)));
  try {
    await handler({
      event: message.event,
      deliveryCount: message.deliveryCount,
      working: () => message.working(),
      ...(message.replayOf === undefined ? {} : { replayOf: message.replayOf }),
    });
  } finally {
    clearInterval(timer);
  }
};

const deadLetter = async (
  message: BusMessage,
  context: DeliveryContext,
  error: string,
): Promise<DeliveryOutcome> => {
  const { settings } = context;
  const { event } = message;
  try {
    await context.deadLetters.record({
      // A replay that fails again updates its own record instead of adding a second one.
      id: message.replayOf ?? uuidv7(),
      consumer: settings.name,
      tenantId: event.tenantId,
      event,
      error,
      deliveryCount: message.deliveryCount,
      deadAt: new Date().toISOString(),
    });
  } catch (storeError) {
    // Keep the event: it comes back after the backoff and the dead letter is tried again.
    context.logger.error(
      { consumer: settings.name, eventId: event.eventId, err: storeError },
      'dead letter not stored',
    );
    message.nak(backoffDelay(settings.backoffMs, message.deliveryCount));
    return 'retry';
  }
  context.logger.warn(
    { consumer: settings.name, eventId: event.eventId, deliveryCount: message.deliveryCount, error },
    'event dead-lettered',
  );
  message.term();
  return 'dead-lettered';
};
