import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { describe, expect, it } from 'vitest';
import { describeAppendWatchContract } from '../event-store/append-watch.contract.js';
import { describeEventStoreContract } from '../event-store/event-store.contract.js';
import type { MongoEventStoreOptions } from './mongo-event-store.js';
import { MongoEventStore } from './mongo-event-store.js';

// Both read strategies run here: `walk` is the default on FerretDB, `range` the default on MongoDB.
for (const reads of ['walk', 'range'] as const) {
  describeEventStoreContract(`mongodb, ${reads} reads`, async () => {
    const url = mongoUrlFor(uniqueName('store'));
    const options: MongoEventStoreOptions = { reads };
    // Two clients, as two processes would have: the contract races them against each other.
    const store = await MongoEventStore.connect(url, options);
    const second = await MongoEventStore.connect(url, options);
    return {
      store,
      second,
      cleanup: async () => {
        await store.db.dropDatabase();
        await Promise.all([store.close(), second.close()]);
      },
    };
  });
}

describeAppendWatchContract('mongodb', async () => {
  const store = await MongoEventStore.connect(mongoUrlFor(uniqueName('watch')));
  return {
    store,
    cleanup: async () => {
      await store.db.dropDatabase();
      await store.close();
    },
  };
});

describe('MongoDB event store: what it writes', () => {
  it('one document per commit, keyed tenant|stream|fromVersion, payloads as JSON text', async () => {
    const store = await MongoEventStore.connect(mongoUrlFor(uniqueName('shape')));
    try {
      await store.append('acme', 'order-1', [
        { type: 'Placed', data: { 'a.b': { $gt: 1 } } },
        { type: 'Paid', data: [] },
      ]);
      await store.append('acme', 'order-1', [{ type: 'Shipped', data: { n: 2 ** 53 - 1 } }]);
      const docs = await store.db.collection('commits').find({}).sort({ f: 1 }).toArray();
      expect(docs.map((d) => [d._id, d.f, d.v, d.e.length])).toEqual([
        ['acme|order-1|0000000000000001', 1, 2, 2],
        ['acme|order-1|0000000000000003', 3, 3, 1],
      ]);
      expect(docs[0]!.e[0].d).toBe('{"a.b":{"$gt":1}}');
      expect(docs[1]!.e[0].d).toBe('{"n":9007199254740991}');
      const indexes = (await store.db.collection('commits').indexes()).map((i) => i.name).sort();
      expect(indexes).toEqual(
        store.serverKind === 'ferretdb'
          ? ['_id_', 'commit_id']
          : ['_id_', 'commit_id', 'global_position', 'stream_to_version', 'unsequenced'],
      );
    } finally {
      await store.db.dropDatabase();
      await store.close();
    }
  });
});
