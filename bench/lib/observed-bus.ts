import type {
  Consumer,
  ConsumerOptions,
  DeadLetterStore,
  Delivery,
  EphemeralChannel,
  EventBus,
  EventHandler,
  RecordedEvent,
} from '@keel/core';
import { now } from './stats.js';

/**
 * An EventBus that tells `onDelivery` when each consumer's handler is handed an event (by
 * durable name), then passes it on; everything else goes straight to the inner bus. Lets a
 * benchmark time the hops between services without touching their consumers.
 */
export class ObservedBus implements EventBus {
  constructor(
    readonly inner: EventBus,
    private readonly onDelivery: (consumer: string, event: RecordedEvent, at: number) => void,
  ) {}

  get deadLetters(): DeadLetterStore {
    return this.inner.deadLetters;
  }

  get ephemeral(): EphemeralChannel {
    return this.inner.ephemeral;
  }

  publish(events: RecordedEvent[]): Promise<void> {
    return this.inner.publish(events);
  }

  consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    return this.inner.consume(options, (delivery: Delivery) => {
      this.onDelivery(options.name, delivery.event, now());
      return handler(delivery);
    });
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
