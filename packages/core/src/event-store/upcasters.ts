import type { RecordedEvent } from '../typing/index.js';

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
