import type { Inbox } from './event-bus.js';

/** The dev-mode inbox: handled (consumer, event id) pairs, kept in memory. */
export class InMemoryInbox implements Inbox {
  readonly #handled = new Set<string>();

  has(consumer: string, eventId: string): Promise<boolean> {
    return Promise.resolve(this.#handled.has(`${consumer}|${eventId}`));
  }

  record(consumer: string, eventId: string): Promise<void> {
    this.#handled.add(`${consumer}|${eventId}`);
    return Promise.resolve();
  }
}
