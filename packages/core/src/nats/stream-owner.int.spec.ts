// Which store's events a stream holds: the first store to attach to a stream with events claims
// it, another store is told whose it is, and an emptied stream belongs to whoever attaches next.
// Both ids come from real MongoDB databases (storeIdentity) and the claim lives in NATS KV.
import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import type { JetStreamManager } from '@nats-io/jetstream';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoEventStore, storeIdentity } from '../mongodb/index.js';
import { claimStream } from './stream-owner.js';

const stream = uniqueName('OWNED').toUpperCase();
const prefix = `t.${uniqueName('owned')}`;
let nc: NatsConnection;
let jsm: JetStreamManager;
let stores: MongoEventStore[] = [];

beforeAll(async () => {
  nc = await connect({ servers: testInfra().natsUrl });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`] });
  stores = await Promise.all(
    ['owned_a', 'owned_b'].map((name) => MongoEventStore.connect(mongoUrlFor(uniqueName(name)))),
  );
});

afterAll(async () => {
  await jsm?.streams.delete(stream).catch(() => undefined);
  for (const store of stores) {
    await store.db.dropDatabase();
    await store.close();
  }
  await nc?.close();
});

describe('claimStream (whose events a stream holds)', () => {
  it('gives each database one identity, the same on every call', async () => {
    const [a, b] = stores;
    const first = await storeIdentity(a!.db);
    expect(await storeIdentity(a!.db)).toBe(first);
    expect(await storeIdentity(b!.db)).not.toBe(first);
  });

  it('lets the first store claim a stream with events, tells another whose it is, and frees it once empty', async () => {
    const [a, b] = await Promise.all(stores.map((store) => storeIdentity(store.db)));
    await jetstream(nc).publish(`${prefix}.x`, 'event of a');
    expect(await claimStream(nc, jsm, stream, a!)).toEqual({ owner: a });
    expect(await claimStream(nc, jsm, stream, a!)).toEqual({ owner: a });
    expect(await claimStream(nc, jsm, stream, b!)).toEqual({ owner: a });
    await jsm.streams.purge(stream);
    expect(await claimStream(nc, jsm, stream, b!)).toEqual({ owner: b });
    await jetstream(nc).publish(`${prefix}.x`, 'event of b');
    expect(await claimStream(nc, jsm, stream, a!)).toEqual({ owner: b });
  });
});
