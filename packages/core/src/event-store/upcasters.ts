import type { RecordedEvent } from '../typing/index.js';
import type { EventStore } from './event-store.js';
import type { CommitNotices } from './sequencing.js';

/**
 * Lifts one stored shape of an event type to the current shape. Must return an event already in
 * the current shape as it is (an upcaster runs on every read, old events and new alike).
 */
export type Upcaster = (event: RecordedEvent) => RecordedEvent;

/**
 * Upcasters by event type, applied when events are read: the one place an old shape becomes the
 * current one, so readers see a single shape per type. Upcasters of one type run in the order
 * registered (oldest change first).
 */
export class Upcasters {
  private readonly byType = new Map<string, Upcaster[]>();

  /** Adds an upcaster for `type`, after the ones already registered for it. */
  register(type: string, upcaster: Upcaster): this {
    this.byType.set(type, [...(this.byType.get(type) ?? []), upcaster]);
    return this;
  }

  /** The event in its current shape. */
  upcast(event: RecordedEvent): RecordedEvent {
    const chain = this.byType.get(event.type);
    if (!chain) return event;
    return chain.reduce((lifted, upcaster) => upcaster(lifted), event);
  }

  /** Every event in its current shape, in the same order. */
  upcastAll(events: readonly RecordedEvent[]): RecordedEvent[] {
    return events.map((event) => this.upcast(event));
  }
}

/**
 * The store, every event it hands out lifted by the upcasters: what `read` and `readAll` return
 * and what its commit listeners (`onCommitted`, the relay's fast publish) are told. Wrap a
 * process's store once and its command handlers' loads, its readers and what it publishes see
 * current shapes. Everything else (appends, the other narrow ports, `instanceof`) is the store's own.
 */
export const upcastingReads = <S extends EventStore>(store: S, upcasters: Upcasters): S => {
  const read: EventStore['read'] = async (tenantId, streamName, options) =>
    upcasters.upcastAll(await store.read(tenantId, streamName, options));
  const readAll: EventStore['readAll'] = async (options) => {
    const page = await store.readAll(options);
    return { ...page, events: upcasters.upcastAll(page.events) };
  };
  const notices = (store as Partial<CommitNotices>).onCommitted?.bind(store);
  const onCommitted: CommitNotices['onCommitted'] | undefined =
    notices && ((listener) => notices((events) => listener(upcasters.upcastAll(events))));
  // The store's own methods bound once (append is on the hot path), not on every access.
  const bound = new WeakMap<object, unknown>();
  return new Proxy(store, {
    get(target, property) {
      if (property === 'read') return read;
      if (property === 'readAll') return readAll;
      if (property === 'onCommitted' && onCommitted) return onCommitted;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      let method = bound.get(value);
      if (method === undefined) bound.set(value, (method = value.bind(target)));
      return method;
    },
  });
};
