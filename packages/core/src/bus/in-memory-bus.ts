import { NotFoundError, PreconditionError, UnavailableError } from '../errors/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { assertTenantId, parseStreamName } from '../typing/index.js';
import type { LogPort } from '../logging/index.js';
import { stderrLog } from '../logging/index.js';
import type { ConsumerSettings } from './consumer-settings.js';
import { consumerSettings } from './consumer-settings.js';
import type {
  Consumer,
  ConsumerOptions,
  DeadLetterStore,
  EventBus,
  EventHandler,
  Inbox,
} from './event-bus.js';
import type { BusMessage, DeliveryContext } from './handle-delivery.js';
import { handleDelivery } from './handle-delivery.js';
import { InMemoryDeadLetters } from './in-memory-dead-letters.js';
import { InMemoryInbox } from './in-memory-inbox.js';
import type { EphemeralSubscription } from './ephemeral.js';
import { InMemoryEphemeralChannel } from './ephemeral.js';

/** Settings of the in-process bus; every one has a dev-mode default. */
export interface InMemoryEventBusOptions {
  inbox?: Inbox;
  deadLetters?: DeadLetterStore;
  /** Publishing an event id seen within this window is a no-op, like JetStream's. Default 2 min. */
  duplicateWindowMs?: number;
  logger?: Pick<LogPort, 'warn' | 'error'>;
}

interface LogEntry {
  seq: number;
  event: RecordedEvent;
  category: string;
  replayFor?: string;
  replayOf?: string;
}

/** A delivered, not yet acknowledged event of one durable (JetStream's "ack pending"). */
interface Outstanding {
  entry: LogEntry;
  deliveryCount: number;
  state: 'ready' | 'in-flight' | 'delayed';
  /** Id of the current delivery, 0 when none; stale deliveries may still ack but not nak. */
  delivery: number;
  timer?: ReturnType<typeof setTimeout>;
}

interface Durable {
  settings: ConsumerSettings;
  /** Index in the log of the next event this durable has not looked at. */
  cursor: number;
  outstanding: Map<number, Outstanding>;
  instances: MemoryConsumer[];
  turn: number;
  pumpScheduled: boolean;
}

/**
 * The in-process event bus of the dev mode. It keeps every published event in memory (so a new
 * durable can start from the beginning) and emulates a JetStream durable pull consumer:
 * `maxInFlight` outstanding events, nak with backoff, ack wait, redelivery, dead letters.
 */
export class InMemoryEventBus implements EventBus {
  readonly deadLetters: DeadLetterStore;
  readonly ephemeral = new InMemoryEphemeralChannel();
  readonly #inbox: Inbox;
  readonly #logger: Pick<LogPort, 'warn' | 'error'>;
  readonly #duplicateWindowMs: number;
  readonly #log: LogEntry[] = [];
  readonly #seen = new Map<string, number>();
  readonly #durables = new Map<string, Durable>();
  readonly #watchers = new Map<string, Set<(event: RecordedEvent) => void>>();
  #deliveries = 0;
  #closed = false;

  constructor(options: InMemoryEventBusOptions = {}) {
    this.#inbox = options.inbox ?? new InMemoryInbox();
    this.deadLetters = options.deadLetters ?? new InMemoryDeadLetters();
    this.#logger = options.logger ?? stderrLog;
    this.#duplicateWindowMs = options.duplicateWindowMs ?? 120_000;
  }

  async publish(events: RecordedEvent[]): Promise<void> {
    this.#assertOpen();
    // Every event is checked before any is published: a bad batch changes nothing.
    const checked = events.map((event) => ({ event, category: checkEvent(event) }));
    const now = Date.now();
    for (const [eventId, at] of this.#seen) {
      if (at > now - this.#duplicateWindowMs) break;
      this.#seen.delete(eventId);
    }
    for (const { event, category } of checked) {
      if (this.#seen.has(event.eventId)) continue;
      this.#seen.set(event.eventId, now);
      // A JSON copy, so the dev mode sees exactly what NATS subscribers would see.
      this.#append({ event: JSON.parse(JSON.stringify(event)) as RecordedEvent, category });
      this.#tellWatchers(event);
    }
  }

  watch(
    stream: { tenantId: string; streamName: string },
    onEvent: (event: RecordedEvent) => void,
  ): EphemeralSubscription {
    assertTenantId(stream.tenantId);
    const key = `${stream.tenantId}\u0000${stream.streamName}`;
    const set = this.#watchers.get(key) ?? new Set();
    set.add(onEvent);
    this.#watchers.set(key, set);
    return {
      unsubscribe: () => {
        set.delete(onEvent);
        if (set.size === 0 && this.#watchers.get(key) === set) this.#watchers.delete(key);
      },
    };
  }

  #tellWatchers(event: RecordedEvent): void {
    const set = this.#watchers.get(`${event.tenantId}\u0000${event.streamName}`);
    if (!set) return;
    for (const onEvent of [...set]) {
      try {
        onEvent(JSON.parse(JSON.stringify(event)) as RecordedEvent);
      } catch (error) {
        this.#logger.warn({ err: error }, 'stream watcher failed');
      }
    }
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    this.#assertOpen();
    const settings = consumerSettings(options);
    let durable = this.#durables.get(settings.name);
    if (durable === undefined) {
      const cursor = settings.deliverFrom === 'all' ? 0 : this.#log.length;
      durable = { settings, cursor, outstanding: new Map(), instances: [], turn: 0, pumpScheduled: false };
      this.#durables.set(settings.name, durable);
    } else {
      durable.settings = { ...settings, deliverFrom: durable.settings.deliverFrom };
    }
    const target = durable;
    const consumer = new MemoryConsumer(
      settings.name,
      () => ({
        settings: target.settings,
        handler,
        inbox: this.#inbox,
        duplicateWindowMs: this.#duplicateWindowMs,
        deadLetters: this.deadLetters,
        logger: this.#logger,
        ...(options.observe ? { observe: options.observe } : {}),
      }),
      () => this.#schedulePump(target),
      () => {
        target.instances = target.instances.filter((c) => c !== consumer);
      },
    );
    durable.instances.push(consumer);
    this.#schedulePump(durable);
    return consumer;
  }

  /** Events of the durable's filter after its cursor, plus those delivered and not yet acked. */
  async pending(name: string): Promise<number | undefined> {
    const durable = this.#durables.get(name);
    if (durable === undefined) return undefined;
    let ahead = 0;
    for (let seq = durable.cursor; seq < this.#log.length; seq++) {
      const entry = this.#log[seq]!;
      const { tenantId, category } = durable.settings.filter;
      if (tenantId !== undefined && entry.event.tenantId !== tenantId) continue;
      if (category !== undefined && entry.category !== category) continue;
      ahead++;
    }
    return ahead + durable.outstanding.size;
  }

  async replayDeadLetter(id: string): Promise<void> {
    this.#assertOpen();
    const deadLetter = await this.deadLetters.get(id);
    if (deadLetter === undefined) throw new NotFoundError(`dead letter ${id} not found`);
    if (deadLetter.replayedAt !== undefined)
      throw new PreconditionError(`dead letter ${id} was already replayed`);
    const { category } = parseStreamName(deadLetter.event.streamName);
    this.#append({ event: deadLetter.event, category, replayFor: deadLetter.consumer, replayOf: id });
  }

  async ping(): Promise<void> {
    if (this.#closed) throw new UnavailableError('the in-process bus is closed');
  }

  async close(): Promise<void> {
    this.#closed = true;
    const durables = [...this.#durables.values()];
    await Promise.all(durables.flatMap((d) => d.instances.map((c) => c.stop())));
    for (const d of durables) for (const o of d.outstanding.values()) clearTimeout(o.timer);
  }

  #assertOpen(): void {
    if (this.#closed) throw new PreconditionError('event bus is closed');
  }

  #append(entry: Omit<LogEntry, 'seq'>): void {
    this.#log.push({ ...entry, seq: this.#log.length + 1 });
    for (const durable of this.#durables.values()) this.#schedulePump(durable);
  }

  #schedulePump(durable: Durable): void {
    if (durable.pumpScheduled || this.#closed) return;
    durable.pumpScheduled = true;
    queueMicrotask(() => {
      durable.pumpScheduled = false;
      if (!this.#closed) this.#pump(durable);
    });
  }

  #pump(durable: Durable): void {
    for (;;) {
      const instance = nextInstance(durable);
      if (instance === undefined) return;
      const outstanding = this.#next(durable);
      if (outstanding === undefined) return;
      this.#deliver(durable, instance, outstanding);
    }
  }

  /** The oldest event due for redelivery, else the next matching event while under maxInFlight. */
  #next(durable: Durable): Outstanding | undefined {
    let due: Outstanding | undefined;
    for (const o of durable.outstanding.values()) {
      if (o.state === 'ready' && (due === undefined || o.entry.seq < due.entry.seq)) due = o;
    }
    if (due !== undefined || durable.outstanding.size >= durable.settings.maxInFlight) return due;
    while (durable.cursor < this.#log.length) {
      const entry = this.#log[durable.cursor++]!;
      const { tenantId, category } = durable.settings.filter;
      if (tenantId !== undefined && entry.event.tenantId !== tenantId) continue;
      if (category !== undefined && entry.category !== category) continue;
      const fresh: Outstanding = { entry, deliveryCount: 0, state: 'ready', delivery: 0 };
      durable.outstanding.set(entry.seq, fresh);
      return fresh;
    }
    return undefined;
  }

  #deliver(durable: Durable, instance: MemoryConsumer, o: Outstanding): void {
    const delivery = ++this.#deliveries;
    o.deliveryCount += 1;
    o.state = 'in-flight';
    o.delivery = delivery;
    const current = (): boolean => o.delivery === delivery && durable.outstanding.get(o.entry.seq) === o;
    const armAckWait = (): void => {
      clearTimeout(o.timer);
      o.timer = setTimeout(() => {
        if (!current()) return;
        o.state = 'ready';
        o.delivery = 0;
        this.#schedulePump(durable);
      }, durable.settings.ackWaitMs);
    };
    const settle = (): void => {
      if (durable.outstanding.get(o.entry.seq) !== o) return;
      clearTimeout(o.timer);
      durable.outstanding.delete(o.entry.seq);
      this.#schedulePump(durable);
    };
    armAckWait();
    const message: BusMessage = {
      event: structuredClone(o.entry.event),
      deliveryCount: o.deliveryCount,
      ...(o.entry.replayFor === undefined ? {} : { replayFor: o.entry.replayFor }),
      ...(o.entry.replayOf === undefined ? {} : { replayOf: o.entry.replayOf }),
      working: () => {
        if (current()) armAckWait();
      },
      ack: settle,
      term: settle,
      nak: (delayMs) => {
        if (!current()) return;
        clearTimeout(o.timer);
        o.state = 'delayed';
        o.delivery = 0;
        o.timer = setTimeout(() => {
          o.state = 'ready';
          this.#schedulePump(durable);
        }, delayMs);
      },
    };
    instance.run(message);
  }
}

/** One instance of a durable consumer of the in-memory bus. */
class MemoryConsumer implements Consumer {
  readonly #active = new Set<Promise<void>>();
  #stopping = false;

  constructor(
    readonly name: string,
    private readonly context: () => DeliveryContext,
    private readonly onIdle: () => void,
    private readonly onStop: () => void,
  ) {}

  accepting(maxInFlight: number): boolean {
    return !this.#stopping && this.#active.size < maxInFlight;
  }

  run(message: BusMessage): void {
    const context = this.context();
    const running: Promise<void> = handleDelivery(message, context)
      .then(
        () => undefined,
        (error: unknown) => context.logger.error({ consumer: this.name, err: error }, 'delivery failed'),
      )
      .finally(() => {
        this.#active.delete(running);
        this.onIdle();
      });
    this.#active.add(running);
  }

  async stop(): Promise<void> {
    if (!this.#stopping) {
      this.#stopping = true;
      this.onStop();
    }
    await Promise.all([...this.#active]);
  }
}

const nextInstance = (durable: Durable): MemoryConsumer | undefined => {
  const { instances, settings } = durable;
  for (let i = 0; i < instances.length; i++) {
    const candidate = instances[(durable.turn + i) % instances.length]!;
    if (candidate.accepting(settings.maxInFlight)) {
      durable.turn = (durable.turn + i + 1) % instances.length;
      return candidate;
    }
  }
  return undefined;
};

/** Checks what the NATS adapter puts in subjects, so both adapters reject the same events. */
const checkEvent = (event: RecordedEvent): string => {
  assertTenantId(event.tenantId);
  return parseStreamName(event.streamName).category;
};
