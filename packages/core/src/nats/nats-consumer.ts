import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { LogPort } from '../logging/index.js';
import type { Consumer } from '../bus/event-bus.js';
import type { BusMessage, DeliveryContext } from '../bus/handle-delivery.js';
import { handleDelivery } from '../bus/handle-delivery.js';
import type { RecordedEvent } from '../typing/index.js';
import { KeelHeaders } from './nats-headers.js';

/** One instance of a durable pull consumer: pulls at most `maxInFlight` messages, handles them. */
export class NatsConsumer implements Consumer {
  readonly #active = new Set<Promise<void>>();
  readonly #loop: Promise<void>;
  #stopping = false;

  private constructor(
    readonly name: string,
    private readonly messages: ConsumerMessages,
    private readonly context: DeliveryContext,
  ) {
    this.#loop = this.#run();
  }

  /** Starts pulling from a durable that `declareConsumer` has declared. */
  static async start(
    js: JetStreamClient,
    streamName: string,
    context: DeliveryContext,
  ): Promise<NatsConsumer> {
    const durable = await js.consumers.get(streamName, context.settings.name);
    // Pull no more than may be outstanding: a buffered message would wait while its ack wait runs.
    const messages = await durable.consume({ max_messages: context.settings.maxInFlight });
    return new NatsConsumer(context.settings.name, messages, context);
  }

  async stop(): Promise<void> {
    if (!this.#stopping) {
      this.#stopping = true;
      await Promise.all([...this.#active]);
      await this.messages.close();
    }
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { maxInFlight } = this.context.settings;
    try {
      for await (const msg of this.messages) {
        if (this.#stopping) {
          // Pulled while stopping: hand it back at once rather than after its ack wait.
          msg.nak();
          continue;
        }
        const running: Promise<void> = this.#handle(msg).finally(() => this.#active.delete(running));
        this.#active.add(running);
        if (this.#active.size >= maxInFlight) await Promise.race(this.#active);
      }
    } catch (error) {
      this.context.logger.error({ consumer: this.name, err: error }, 'consumer stopped pulling');
    }
    await Promise.all([...this.#active]);
  }

  async #handle(msg: JsMsg): Promise<void> {
    const message = toBusMessage(msg, this.context.logger, this.name);
    if (message === undefined) return;
    await handleDelivery(message, this.context);
  }
}

const toBusMessage = (
  msg: JsMsg,
  logger: Pick<LogPort, 'warn' | 'error'>,
  consumer: string,
): BusMessage | undefined => {
  let event: RecordedEvent;
  try {
    event = msg.json<RecordedEvent>();
  } catch (error) {
    // Not an event: nothing can ever handle it, and there is no event to dead-letter.
    logger.error(
      { consumer, subject: msg.subject, seq: msg.seq, err: error },
      'unreadable message terminated',
    );
    msg.term();
    return undefined;
  }
  const replayFor = msg.headers?.get(KeelHeaders.ReplayFor) ?? '';
  const replayOf = msg.headers?.get(KeelHeaders.ReplayOf) ?? '';
  return {
    event,
    deliveryCount: msg.info.deliveryCount,
    ...(replayFor === '' ? {} : { replayFor }),
    ...(replayOf === '' ? {} : { replayOf }),
    working: () => msg.working(),
    ack: () => msg.ack(),
    nak: (delayMs) => msg.nak(delayMs > 0 ? delayMs : undefined),
    term: () => msg.term(),
  };
};
