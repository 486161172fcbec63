import type {
  Consumer,
  ConsumerOptions,
  DeadLetterStore,
  EphemeralChannel,
  EphemeralSubscription,
  EventBus,
  EventHandler,
  RecordedEvent,
} from '@keel/core';

/**
 * An EventBus that remembers the consumers started through it, so a shutdown can drain them
 * (let their handlers finish) before the outbox is flushed and the connection closed.
 */
export class TrackingEventBus implements EventBus {
  readonly #consumers = new Set<Consumer>();

  constructor(
    readonly inner: EventBus,
    private readonly options: { watch?: boolean } = {},
  ) {}

  /** Whether `watch` tells anything (watches are off with the fast path). */
  get watching(): boolean {
    return this.inner.watch !== undefined && this.options.watch !== false;
  }

  get deadLetters(): DeadLetterStore {
    return this.inner.deadLetters;
  }

  get ephemeral(): EphemeralChannel {
    return this.inner.ephemeral;
  }

  /** How many consumers are running. */
  get consumerCount(): number {
    return this.#consumers.size;
  }

  publish(events: RecordedEvent[]): Promise<void> {
    return this.inner.publish(events);
  }

  watch(
    stream: { tenantId: string; streamName: string },
    onEvent: (event: RecordedEvent) => void,
  ): EphemeralSubscription {
    if (!this.inner.watch || this.options.watch === false) return { unsubscribe: () => undefined };
    return this.inner.watch(stream, onEvent);
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    const consumer = await this.inner.consume(options, handler);
    const tracked: Consumer = {
      name: consumer.name,
      stop: async () => {
        await consumer.stop();
        this.#consumers.delete(tracked);
      },
    };
    this.#consumers.add(tracked);
    return tracked;
  }

  async pending(name: string): Promise<number | undefined> {
    return this.inner.pending ? this.inner.pending(name) : undefined;
  }

  replayDeadLetter(id: string): Promise<void> {
    return this.inner.replayDeadLetter(id);
  }

  /** Stops every consumer started through this bus, each letting its handler in progress finish. */
  async stopConsumers(): Promise<number> {
    const consumers = [...this.#consumers];
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    return consumers.length;
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
