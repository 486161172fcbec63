import { Kvm } from '@nats-io/kv';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';

/** The KV bucket recording, per event stream, the identity of the store whose events it holds. */
export const STREAM_OWNERS_BUCKET = 'KEEL_STREAM_STORES';

/**
 * Records `storeId` as the store whose events `streamName` holds, unless the stream already holds
 * another store's events: then that store's id is returned (and nothing changes). An empty stream
 * holds no one's events, so it is claimed whatever it says (a stream deleted and made again).
 */
export const claimStream = async (
  nc: NatsConnection,
  jsm: JetStreamManager,
  streamName: string,
  storeId: string,
): Promise<{ owner: string }> => {
  const owners = await new Kvm(nc).create(STREAM_OWNERS_BUCKET, { history: 1 });
  const { state } = await jsm.streams.info(streamName);
  if (state.messages === 0) {
    await owners.put(streamName, storeId);
    return { owner: storeId };
  }
  const recorded = await owners.get(streamName);
  if (recorded && recorded.operation === 'PUT' && recorded.string() !== '') {
    return { owner: recorded.string() };
  }
  try {
    await owners.create(streamName, storeId);
    return { owner: storeId };
  } catch {
    // Another process claimed it first: its claim stands.
    const winner = await owners.get(streamName);
    return { owner: winner?.string() ?? storeId };
  }
};
