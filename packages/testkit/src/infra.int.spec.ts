import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { mongoUrlFor, testInfra, uniqueName } from './index.js';

describe('test infrastructure from global setup', () => {
  it('gives a NATS URL where a JetStream stream can be created and used', async () => {
    const nc = await connect({ servers: testInfra().natsUrl });
    const stream = uniqueName('testkit');
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
      const js = jsm.jetstream();
      const ack = await js.publish(`${stream}.hello`, 'world');
      expect(ack).toMatchObject({ stream, seq: 1 });
      expect((await jsm.streams.info(stream)).state.messages).toBe(1);
    } finally {
      await jetstreamManager(nc)
        .then((jsm) => jsm.streams.delete(stream))
        .catch(() => undefined);
      await nc.close();
    }
  });

  it('gives a MongoDB URL where a fresh database accepts an insert and a find', async () => {
    const dbName = uniqueName('testkit');
    const client = new MongoClient(mongoUrlFor(dbName));
    try {
      await client.connect();
      const db = client.db();
      expect(db.databaseName).toBe(dbName);
      await db.collection('things').insertOne({ _id: 'a' as never, n: 1 });
      expect(await db.collection('things').find({}).toArray()).toEqual([{ _id: 'a', n: 1 }]);
      await db.dropDatabase();
    } finally {
      await client.close();
    }
  });

  it('hands the URLs to spawned processes through the env', () => {
    expect(process.env.KEEL_TEST_NATS_URL).toBe(testInfra().natsUrl);
    expect(process.env.KEEL_TEST_MONGODB_URL).toBe(testInfra().mongoUrl);
  });
});
