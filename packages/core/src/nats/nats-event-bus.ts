import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection } from '@nats-io/nats-core';
import { headers } from '@nats-io/nats-core';
import type { LogPort } from '../logging/index.js';
import { stderrLog } from '../logging/index.js';
import { consumerSettings } from '../bus/consumer-settings.js';
import type {
  Consumer,
  ConsumerOptions,
  DeadLetterStore,
  EventBus,
  EventHandler,
  Inbox,
} from '../bus/event-bus.js';
import {
  EventTooLargeError,
  NotFoundError,
  PreconditionError,
  UnavailableError,
  ValidationError,
} from '../errors/index.js';
import type { RecordedEvent } from '../typing/index.js';
import type { EphemeralChannel, EphemeralSubscription } from '../bus/ephemeral.js';
import type { RelayWakeups } from '../outbox/ports.js';
import { connectNats } from './connection.js';
import { NatsEphemeralChannel } from './nats-ephemeral.js';
import { NatsRelayWakeups } from './nats-relay-wakeups.js';
import { declareConsumer, declareStream } from './jetstream-setup.js';
import { NatsConsumer } from './nats-consumer.js';
import { claimStream } from './stream-owner.js';
import { KeelHeaders } from './nats-headers.js';
import { DEFAULT_SUBJECT_PREFIX, checkSubjectPrefix, encodeSubjectToken, eventSubject } from './subjects.js';

/** How to reach NATS and where the events live. */
export interface NatsEventBusOptions {
  servers: string | string[];
  /** The JetStream stream holding the events, e.g. `KEEL_EVENTS`. */
  streamName: string;
  /** First subject tokens; the stream captures `<prefix>.>`. Default `keel.events`. */
  subjectPrefix?: string;
  inbox: Inbox;
  deadLetters: DeadLetterStore;
  /** JetStream's `duplicate_window`: a re-published event id within it is stored once. Default 2 min. */
  duplicateWindowMs?: number;
  /** Shown in the server's connection list. */
  connectionName?: string;
  logger?: Pick<LogPort, 'warn' | 'error'>;
}

const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The production EventBus: JetStream with one message per event on
 * `<prefix>.<tenant>.<category>.<stream id>` (Nats-Msg-Id = event id) and durable pull
 * consumers (explicit ack, nak with backoff, dead letters; ordering as ConsumerOptions says).
 */
export class NatsEventBus implements EventBus {
  readonly #consumers = new Set<NatsConsumer>();
  #closed: Promise<void> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly streamName: string,
    private readonly subjectPrefix: string,
    private readonly inbox: Inbox,
    readonly deadLetters: DeadLetterStore,
    private readonly logger: Pick<LogPort, 'warn' | 'error'>,
    private readonly duplicateWindowMs: number,
  ) {
    this.ephemeral = new NatsEphemeralChannel(nc, `${subjectPrefix}_live`, logger);
  }

  /** Core NATS subjects under `<subjectPrefix>_live`, outside the stream's `<subjectPrefix>.>`. */
  readonly ephemeral: EphemeralChannel;

  /**
   * Wake-up notices for the outbox relays named `name` of every process on this NATS and prefix,
   * on the core subject `<subjectPrefix>_relay.<name>` (outside the stream, like the ephemeral one).
   */
  relayWakeups(name: string): RelayWakeups {
    return new NatsRelayWakeups(
      this.nc,
      `${this.subjectPrefix}_relay.${encodeSubjectToken(name)}`,
      this.logger,
    );
  }

  /** Connects and declares the stream (create or update), so it is ready to publish and consume. */
  static async connect(options: NatsEventBusOptions): Promise<NatsEventBus> {
    if (!STREAM_NAME.test(options.streamName)) {
      throw new ValidationError(`stream name "${options.streamName}" must be 1-64 letters, digits, _ or -`, {
        field: 'streamName',
      });
    }
    const subjectPrefix = checkSubjectPrefix(options.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX);
    const nc = await connectNats(options.servers, options.connectionName);
    try {
      const jsm = await jetstreamManager(nc);
      const duplicateWindowMs = options.duplicateWindowMs ?? 120_000;
      await declareStream(jsm, { name: options.streamName, subjectPrefix, duplicateWindowMs });
      const logger = options.logger ?? stderrLog;
      return new NatsEventBus(
        nc,
        jetstream(nc),
        jsm,
        options.streamName,
        subjectPrefix,
        options.inbox,
        options.deadLetters,
        logger,
        duplicateWindowMs,
      );
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  /**
   * Publishes one message per event, pipelined on one connection (sent in order, then every ack
   * awaited). On any failure it throws and the caller retries the batch: ids already stored are
   * deduplicated within the duplicate window. Should a middle message fail while later ones are
   * stored (a timeout, not a lost connection), the retry stores it after them: the stream's order
   * on the bus then differs from the log's, which is why consumers still check versions.
   */
  async ping(): Promise<void> {
    if (this.nc.isClosed()) throw new UnavailableError('the NATS connection is closed');
    try {
      await this.nc.rtt();
    } catch (error) {
      throw new UnavailableError('NATS does not answer', { cause: error });
    }
  }

  async publish(events: RecordedEvent[]): Promise<void> {
    this.#assertOpen();
    const maxPayload = this.nc.info?.max_payload ?? Number.POSITIVE_INFINITY;
    const messages = events.map((event) => {
      const body = JSON.stringify(event);
      const size = Buffer.byteLength(body);
      if (size > maxPayload) throw new EventTooLargeError(size, maxPayload);
      return {
        subject: eventSubject(this.subjectPrefix, event),
        body,
        msgID: event.eventId,
        headers: eventHeaders(event),
      };
    });
    // Sent within this call (each publish is written into the connection's buffer synchronously),
    // then written to the socket at once rather than at the next turn of the event loop: a
    // commit's fast publish leaves before the appending caller goes on with its own work.
    const acks = this.#publishAll(messages);
    writeNow(this.nc);
    await acks;
  }

  /** A core NATS subscription on the stream's event subject: sees each publish as JetStream takes it. */
  watch(
    stream: { tenantId: string; streamName: string },
    onEvent: (event: RecordedEvent) => void,
  ): EphemeralSubscription {
    this.#assertOpen();
    const subject = eventSubject(this.subjectPrefix, stream);
    const sub = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) return this.logger.warn({ err: error, subject }, 'stream watch error');
        try {
          onEvent(msg.json<RecordedEvent>());
        } catch (handlerError) {
          this.logger.warn({ err: handlerError, subject }, 'stream watcher failed');
        }
      },
    });
    return { unsubscribe: () => sub.unsubscribe() };
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    this.#assertOpen();
    const settings = consumerSettings(options);
    try {
      await declareConsumer(this.jsm, this.streamName, this.subjectPrefix, settings);
    } catch (error) {
      throw new UnavailableError(`cannot declare consumer ${settings.name}`, { cause: error });
    }
    const context = {
      settings,
      handler,
      inbox: this.inbox,
      duplicateWindowMs: this.duplicateWindowMs,
      deadLetters: this.deadLetters,
      logger: this.logger,
      ...(options.observe ? { observe: options.observe } : {}),
    };
    const consumer = await NatsConsumer.start(this.js, this.streamName, context);
    this.#consumers.add(consumer);
    const stop = consumer.stop.bind(consumer);
    return {
      name: consumer.name,
      stop: async () => {
        await stop();
        this.#consumers.delete(consumer);
      },
    };
  }

  /** JetStream's count for the durable: messages not yet delivered plus those awaiting an ack. */
  async pending(name: string): Promise<number | undefined> {
    if (this.#closed !== undefined) return undefined;
    try {
      const info = await this.jsm.consumers.info(this.streamName, name);
      return info.num_pending + info.num_ack_pending;
    } catch {
      return undefined;
    }
  }

  async replayDeadLetter(id: string): Promise<void> {
    this.#assertOpen();
    const deadLetter = await this.deadLetters.get(id);
    if (deadLetter === undefined) throw new NotFoundError(`dead letter ${id} not found`);
    if (deadLetter.replayedAt !== undefined)
      throw new PreconditionError(`dead letter ${id} was already replayed`);
    const h = eventHeaders(deadLetter.event);
    h.set(KeelHeaders.ReplayFor, deadLetter.consumer);
    h.set(KeelHeaders.ReplayOf, id);
    const { event } = deadLetter;
    await this.#publishAll([
      {
        subject: eventSubject(this.subjectPrefix, event),
        body: JSON.stringify(event),
        msgID: `replay-${id}-${Date.now()}`,
        headers: h,
      },
    ]);
  }

  /**
   * Records that this stream holds the events of the store `storeId`; when it already holds
   * another store's, returns that store's id instead (see stream-owner.ts).
   */
  claimStreamFor(storeId: string): Promise<{ stream: string; owner: string }> {
    return claimStream(this.nc, this.jsm, this.streamName, storeId).then(({ owner }) => ({
      stream: this.streamName,
      owner,
    }));
  }

  /** Stops every consumer (each lets its handler finish and ack), then drains the connection. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await Promise.all([...this.#consumers].map((c) => c.stop()));
      this.#consumers.clear();
      if (!this.nc.isClosed()) await this.nc.drain();
    })();
    return this.#closed;
  }

  async #publishAll(
    messages: { subject: string; body: string; msgID: string; headers: MsgHdrs }[],
  ): Promise<void> {
    // Every publish is sent before the first ack is awaited; one connection keeps their order.
    const acks = messages.map((m) =>
      this.js.publish(m.subject, m.body, { msgID: m.msgID, headers: m.headers }),
    );
    const results = await Promise.allSettled(acks);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) {
      throw new UnavailableError(
        `publish to JetStream failed for ${results.filter((r) => r.status === 'rejected').length} of ${messages.length} events`,
        {
          cause: failed.reason,
        },
      );
    }
  }

  #assertOpen(): void {
    if (this.#closed !== undefined) throw new PreconditionError('event bus is closed');
  }
}

/**
 * Writes what the connection has buffered to its socket now: nats-core otherwise writes it once
 * the current task's microtasks run. A connection of another shape is left as it is.
 */
const writeNow = (nc: NatsConnection): void => {
  const protocol = (nc as unknown as { protocol?: { flushPending?: () => void } }).protocol;
  if (typeof protocol?.flushPending === 'function') protocol.flushPending();
};

const eventHeaders = (event: RecordedEvent): MsgHdrs => {
  const h = headers();
  h.set(KeelHeaders.EventType, event.type);
  h.set(KeelHeaders.Tenant, event.tenantId);
  h.set(KeelHeaders.Stream, encodeURIComponent(event.streamName));
  h.set(KeelHeaders.Version, String(event.version));
  return h;
};
