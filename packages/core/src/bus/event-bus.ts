import type { RecordedEvent } from '../typing/index.js';
import type { EphemeralChannel, EphemeralSubscription } from './ephemeral.js';

/** One delivery of an event to a consumer. */
export interface Delivery {
  event: RecordedEvent;
  /** 1 on the first delivery, then 2, 3, … on redeliveries. */
  deliveryCount: number;
  /** Tells the bus the handler is still working, so the delivery is not redelivered meanwhile. */
  working(): void;
  /** Set when this delivery is an operator's replay of a dead letter. */
  replayOf?: string;
}

/** A consumer's handler. Throwing means "not handled": the bus redelivers, then dead-letters. */
export type EventHandler = (delivery: Delivery) => Promise<void>;

/** What became of one delivery (`skipped`: already handled, or a replay meant for another consumer). */
export type DeliveryOutcome = 'handled' | 'skipped' | 'retry' | 'dead-lettered';

/** Told about each delivery once its outcome is settled (metrics); must not throw. */
export type DeliveryObserver = (report: {
  consumer: string;
  outcome: DeliveryOutcome;
  deliveryCount: number;
  /** How long the handling took, in seconds (inbox check and handler included). */
  seconds: number;
}) => void;

/** Which events a consumer receives. Subjects carry tenant and category, so both filter at the server. */
export interface ConsumerFilter {
  tenantId?: string;
  category?: string;
}

/**
 * A durable consumer's settings. Instances with the same name share the work.
 *
 * Ordering (both adapters, `maxInFlight` 1, the default): the consumer has at most one event
 * outstanding across all its instances, so it handles events one at a time in publish order.
 * An event whose handler fails stays outstanding until its redelivery (after the backoff)
 * succeeds, and an event whose handler's process died stays outstanding until `ackWaitMs`
 * expires, so no later event (of any stream) is handled before it: per-stream order holds after
 * errors and crashes too. Two exceptions: once an event is dead-lettered the later events go on
 * without it (the stream has a gap for this consumer), and a replayed dead letter arrives after
 * events published before the replay. With `maxInFlight` above 1 events are handled concurrently
 * and there is no order guarantee: handlers must then check versions.
 */
export interface ConsumerOptions {
  /** Durable name: letters, digits, `_` and `-`. */
  name: string;
  filter?: ConsumerFilter;
  /** Deliveries before the event is dead-lettered. Default 5. */
  maxDeliver?: number;
  /** Delays before each redelivery (the last one repeats). Default [200, 1000, 5000]. */
  backoffMs?: number[];
  /** How long a delivery may go without ack or `working()` before redelivery. Default 30 s. */
  ackWaitMs?: number;
  /**
   * `inbox` (default): an event this consumer already handled (by event id) is acked without
   * calling the handler again. `none`: the handler does its own idempotency (e.g. a version check).
   */
  idempotency?: 'inbox' | 'none';
  /** Where a new durable starts: every event still on the bus (`all`, default) or only new ones. */
  deliverFrom?: 'all' | 'new';
  /**
   * Events outstanding (delivered, not yet acked) at once across all instances (JetStream
   * `max_ack_pending`). 1 (default) keeps the order described above; more trades order for
   * throughput.
   */
  maxInFlight?: number;
  /** Told about each delivery's outcome (the runtime's metrics); not part of the durable's settings. */
  observe?: DeliveryObserver;
}

/** A running consumer. */
export interface Consumer {
  readonly name: string;
  /** Stops fetching, lets the handler in progress finish, and resolves. */
  stop(): Promise<void>;
}

/** An event a consumer failed `maxDeliver` times, kept for an operator to inspect and replay. */
export interface DeadLetter {
  id: string;
  consumer: string;
  tenantId: string;
  event: RecordedEvent;
  error: string;
  deliveryCount: number;
  deadAt: string;
  replayedAt?: string;
}

/** Dead-letter records (MongoDB in production, memory in dev). */
export interface DeadLetterStore {
  /** Stores the record, replacing one with the same id (a replay that failed again). */
  record(deadLetter: DeadLetter): Promise<void>;
  /** Oldest first; replayed records only with `includeReplayed`; at most `limit` (default 100). */
  list(options?: {
    consumer?: string;
    tenantId?: string;
    includeReplayed?: boolean;
    limit?: number;
  }): Promise<DeadLetter[]>;
  get(id: string): Promise<DeadLetter | undefined>;
  markReplayed(id: string, at: string): Promise<void>;
}

/** Remembers which events a consumer has handled, for idempotent handling across redeliveries. */
export interface Inbox {
  has(consumer: string, eventId: string): Promise<boolean>;
  record(consumer: string, eventId: string): Promise<void>;
}

/** The event bus port: the NATS JetStream adapter and the in-process bus pass one contract suite. */
export interface EventBus {
  /** Publishes recorded events in order; the bus deduplicates by event id. */
  publish(events: RecordedEvent[]): Promise<void>;
  consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer>;
  readonly deadLetters: DeadLetterStore;
  /**
   * Redelivers a dead letter to its consumer only (with `maxDeliver` fresh attempts) and marks it
   * replayed when handled. NotFoundError for an unknown id, PreconditionError when already replayed.
   */
  replayDeadLetter(id: string): Promise<void>;
  /** Live, unstored messages beside the events: token deltas and cancel signals. */
  readonly ephemeral: EphemeralChannel;
  /**
   * Tells `onEvent` about each event of one stream as it is published from now on (a live view,
   * not a consumer: no ack, no redelivery, missed while not listening, duplicates possible,
   * commits of two writers in either order). A reader of the log uses it to know when to read
   * again; the only event it may take from it instead of the log is the one whose version
   * directly follows what it has (a published event is committed, and versions are dense).
   */
  watch?(
    stream: { tenantId: string; streamName: string },
    onEvent: (event: RecordedEvent) => void,
  ): EphemeralSubscription;
  /**
   * Events the durable consumer `name` has not acknowledged yet (not delivered, or in flight);
   * undefined when the bus does not know the consumer.
   */
  pending?(name: string): Promise<number | undefined>;
  /** Resolves when the bus's server answers a round trip (readiness); throws UnavailableError if not. */
  ping(): Promise<void>;
  /** Stops every consumer (letting handlers finish) and closes connections. */
  close(): Promise<void>;
}
