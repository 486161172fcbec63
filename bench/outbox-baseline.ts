/**
 * The raw JetStream baseline of the outbox benchmark: `js.publish` and a durable pull consumer
 * with the plain NATS client. This is the only file outside packages/core that imports
 * `@nats-io/*` (house rule: adapters only), because a baseline must not go through Keel's bus.
 * It also deletes the benchmark's streams afterwards, Keel's included.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';

/** A throwaway JetStream stream with one consumer, on the plain client. */
export interface RawJetStream {
  /** Publishes `body` with `Nats-Msg-Id = msgId` and waits for JetStream's ack. */
  publish(body: string, msgId: string): Promise<void>;
  /** Deletes the given streams (this one and any other the benchmark created), then closes. */
  close(alsoDelete?: string[]): Promise<void>;
}

/**
 * Creates the stream `streamName` on `<subjectPrefix>.>` and a durable pull consumer with the
 * settings Keel's consumers use by default (explicit ack, one message outstanding); each received
 * message is parsed as JSON, acked, and reported to `onReceive` with its `Nats-Msg-Id`.
 */
export async function rawJetStream(
  url: string,
  streamName: string,
  subjectPrefix: string,
  onReceive: (msgId: string) => void,
): Promise<RawJetStream> {
  const nc: NatsConnection = await connect({ servers: url, name: 'keel-bench-raw' });
  const jsm: JetStreamManager = await jetstreamManager(nc);
  const js: JetStreamClient = jetstream(nc);
  const subject = `${subjectPrefix}.bench.conv.raw`;
  await jsm.streams.add({ name: streamName, subjects: [`${subjectPrefix}.>`] });
  await jsm.consumers.add(streamName, {
    durable_name: 'raw',
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_ack_pending: 1,
  });
  const consumer = await js.consumers.get(streamName, 'raw');
  const messages = await consumer.consume({ max_messages: 1 });
  const loop = (async () => {
    for await (const msg of messages) {
      msg.json<unknown>();
      msg.ack();
      onReceive(msg.headers?.get('Nats-Msg-Id') ?? '');
    }
  })();
  return {
    async publish(body, msgId) {
      await js.publish(subject, body, { msgID: msgId });
    },
    async close(alsoDelete = []) {
      await messages.close();
      await loop;
      for (const name of [streamName, ...alsoDelete]) await jsm.streams.delete(name).catch(() => false);
      await nc.close();
    },
  };
}
