import type { DeadLetterStore, EventBus, EventHandler } from '../bus/event-bus.js';
import type { EventStore, SnapshotStore } from '../event-store/event-store.js';
import type { CommitNotices } from '../event-store/sequencing.js';
import type { RecordedEvent } from '../typing/index.js';
import type { EventSealer } from './event-sealer.js';

/**
 * The store, the content of sealed streams' events sealed at append and opened on every read path
 * (`read`, `readAll`, the commit notices, snapshots): what the log and the snapshot collection hold
 * is ciphertext, what readers get is the events as written (ERASED_EVENT_TYPE once the key is
 * destroyed). Everything else (the narrow ports, `db`, `instanceof`) is the store's own. Apply it
 * under `upcastingReads`, so upcasters see content.
 */
export const sealingStore = <S extends EventStore>(store: S, sealer: EventSealer): S => {
  const append: EventStore['append'] = async (tenantId, streamName, events, options) => {
    const sealed = await sealer.seal(tenantId, streamName, events);
    const result = await store.append(tenantId, streamName, sealed, options);
    // A fresh commit's events are the ones given (their data as written); a replay's are read back.
    const events$ =
      result.idempotentReplay || result.events.length !== events.length
        ? await sealer.openAll(result.events)
        : result.events.map((event, index) => ({ ...event, data: events[index]!.data }));
    return { ...result, events: events$ };
  };
  const read: EventStore['read'] = async (tenantId, streamName, options) =>
    sealer.openAll(await store.read(tenantId, streamName, options));
  const readAll: EventStore['readAll'] = async (options) => {
    const page = await store.readAll(options);
    return { ...page, events: await sealer.openAll(page.events) };
  };
  const notices = (store as Partial<CommitNotices>).onCommitted?.bind(store);
  const onCommitted: CommitNotices['onCommitted'] | undefined =
    notices &&
    ((listener) =>
      notices((events) => {
        // Keys of this process's own commits are held (the append made or found them).
        const opened = sealer.openHeld(events);
        if (opened) listener(opened);
      }));
  const snapshots = sealingSnapshots(store.snapshots, sealer);
  const bound = new WeakMap<object, unknown>();
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') return append;
      if (property === 'read') return read;
      if (property === 'readAll') return readAll;
      if (property === 'snapshots') return snapshots;
      if (property === 'onCommitted' && onCommitted) return onCommitted;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let method = bound.get(value);
      if (method === undefined) bound.set(value, (method = value.bind(target)));
      return method;
    },
  });
};

/** Snapshots of sealed streams sealed whole; one whose key is destroyed is neither saved nor loaded. */
const sealingSnapshots = (snapshots: SnapshotStore, sealer: EventSealer): SnapshotStore => ({
  async load(tenantId, streamName, name) {
    const snapshot = await snapshots.load(tenantId, streamName, name);
    if (snapshot === undefined || sealer.snapshotKeyStream(streamName) === undefined)
      return snapshot as never;
    const state = await sealer.openState(tenantId, streamName, name, snapshot.state);
    return state === undefined ? undefined : { ...snapshot, state: state as never };
  },
  async save(tenantId, streamName, snapshot) {
    const state = await sealer.sealState(tenantId, streamName, snapshot.name, snapshot.state);
    if (state === undefined) return;
    await snapshots.save(tenantId, streamName, { ...snapshot, state });
  },
  delete: (tenantId, streamName) => snapshots.delete(tenantId, streamName),
});

/**
 * The bus, what is published sealed (events of sealed streams not sealed yet are sealed on the way,
 * so the JetStream stream retains ciphertext only) and what consumers get opened, then passed
 * through `afterOpen` (the upcasters): a consumer sees the events as written, in their current
 * shape, or ERASED_EVENT_TYPE. Dead letters keep the event sealed (see sealingDeadLetters). `watch`
 * opens what it can without fetching a key (see there).
 */
export class SealingEventBus implements EventBus {
  constructor(
    readonly inner: EventBus,
    private readonly sealer: EventSealer,
    private readonly afterOpen: (event: RecordedEvent) => RecordedEvent = (event) => event,
  ) {}

  get deadLetters(): EventBus['deadLetters'] {
    return sealingDeadLetters(this.inner.deadLetters, this.sealer);
  }

  get ephemeral(): EventBus['ephemeral'] {
    return this.inner.ephemeral;
  }

  /**
   * Events already sealed (a commit as stored: the relay's fast path) go to the inner bus at once,
   * in this call, with no await before it; any that need a key or destroy one are sealed first.
   */
  publish(events: RecordedEvent[]): Promise<void> {
    const now = this.sealer.sealedNow(events);
    if (now === undefined)
      return this.sealer.sealRecorded(events).then((sealed) => this.inner.publish(sealed));
    try {
      return this.inner.publish(now);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  consume(
    options: Parameters<EventBus['consume']>[0],
    handler: EventHandler,
  ): ReturnType<EventBus['consume']> {
    return this.inner.consume(options, async (delivery) => {
      const event = this.afterOpen(await this.sealer.open(delivery.event));
      await handler({
        event,
        deliveryCount: delivery.deliveryCount,
        working: () => delivery.working(),
        ...(delivery.replayOf === undefined ? {} : { replayOf: delivery.replayOf }),
      });
    });
  }

  /**
   * Each published event of one stream, opened with a key this process holds already and upcast,
   * as a read of the log returns it; an event whose key is not held (nor fetched here: the
   * callback is synchronous) is passed as published, sealed: a watcher that needs its content
   * reads the log.
   */
  get watch(): EventBus['watch'] {
    const watch = this.inner.watch?.bind(this.inner);
    return (
      watch &&
      ((stream, onEvent) =>
        watch(stream, (event) => {
          const opened = this.sealer.openHeld([event])?.[0];
          onEvent(opened === undefined ? event : this.afterOpen(opened));
        }))
    );
  }

  get pending(): EventBus['pending'] {
    return this.inner.pending?.bind(this.inner);
  }

  replayDeadLetter(id: string): Promise<void> {
    return this.inner.replayDeadLetter(id);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * The dead-letter store, each recorded event's content sealed as on the bus: a consumer that
 * dead-letters the event it was handed (opened: the hooks' deliveries) stores ciphertext, so a
 * deleted conversation's dead letters read as erased like its log. Records are returned as
 * stored; a replay goes through the bus, whose consumers get it opened (ERASED_EVENT_TYPE once
 * the key is destroyed). An event already sealed (the bus's own dead letters) stays as it is.
 */
export const sealingDeadLetters = (inner: DeadLetterStore, sealer: EventSealer): DeadLetterStore => ({
  record: async (deadLetter) => {
    const { event } = deadLetter;
    const [sealed] = await sealer.seal(event.tenantId, event.streamName, [event]);
    await inner.record({ ...deadLetter, event: sealed ?? event });
  },
  list: (options) => inner.list(options),
  get: (id) => inner.get(id),
  markReplayed: (id, at) => inner.markReplayed(id, at),
});
