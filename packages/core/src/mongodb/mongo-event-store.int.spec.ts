import { mongoUrlFor, uniqueName } from '@keel/testkit';
import type { CommandStartedEvent } from 'mongodb';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { describeAppendWatchContract } from '../event-store/append-watch.contract.js';
import { describeEventStoreContract } from '../event-store/event-store.contract.js';
import { commitKey } from './commit-document.js';
import type { MongoEventStoreOptions } from './mongo-event-store.js';
import { MongoEventStore } from './mongo-event-store.js';

// Every read strategy runs here: `buckets` is the default on FerretDB/PostgreSQL, `walk` on
// FerretDB/SQLite, `range` on MongoDB.
for (const reads of ['walk', 'buckets', 'range'] as const) {
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
          ? ['_id_', 'commit_id', ...(store.streamReads === 'buckets' ? ['stream_bucket', 'unplaced'] : [])]
          : ['_id_', 'commit_id', 'global_position', 'stream_to_version', 'unsequenced'],
      );
    } finally {
      await store.db.dropDatabase();
      await store.close();
    }
  });

  it('bucket reads cross buckets and prove where a stream ends; a log with commits written before buckets is walked', async () => {
    const dbName = uniqueName('buckets');
    const url = mongoUrlFor(dbName);
    const writer = await MongoEventStore.connect(url, { reads: 'buckets' });
    try {
      // 150 one-event commits then one of 3 events: three buckets of 64 versions.
      for (let v = 0; v < 150; v++) {
        await writer.append('acme', 'order-long', [{ type: 'N', data: { v: v + 1 } }], {
          expectedVersion: v,
        });
      }
      await writer.append(
        'acme',
        'order-long',
        ['a', 'b', 'c'].map((x) => ({ type: 'N', data: { x } })),
        {
          expectedVersion: 150,
        },
      );
      const readAll = async (): Promise<void> => {
        const reader = await MongoEventStore.connect(url, { reads: 'buckets' });
        try {
          const all = await reader.read('acme', 'order-long');
          expect(all.map((e) => e.version)).toEqual(Array.from({ length: 153 }, (_, i) => i + 1));
          // From a known boundary (as after a snapshot), across the bucket of 128..191.
          const tail = await reader.read('acme', 'order-long', { fromVersion: 120 });
          expect(tail.map((e) => e.version)).toEqual(Array.from({ length: 34 }, (_, i) => i + 120));
          expect(await reader.streamVersion('acme', 'order-long')).toBe(153);
          expect(await reader.read('acme', 'order-long', { fromVersion: 154 })).toEqual([]);
        } finally {
          await reader.close();
        }
      };
      await readAll();
      // The first 100 commits as an older writer left them, without a bucket: read all the same.
      await writer.db.collection('commits').updateMany({ f: { $lte: 100 } }, { $unset: { k: '' } });
      await readAll();
    } finally {
      await writer.db.dropDatabase();
      await writer.close();
    }
  });

  it('a read after a held event finds its commit by id and the rest by _id, however long the stream: no range query', async () => {
    const dbName = uniqueName('hint');
    const url = mongoUrlFor(dbName);
    const writer = await MongoEventStore.connect(url, { reads: 'buckets' });
    const client = new MongoClient(url, { monitorCommands: true });
    const finds: Array<Record<string, unknown>> = [];
    client.on('commandStarted', (c: CommandStartedEvent) => {
      if (c.commandName === 'find' && c.command.find === 'commits') finds.push(c.command.filter);
    });
    try {
      // 200 commits of 3 events (a long conversation), then the held event's commit of 2 (601..602).
      for (let c = 0; c < 200; c++) {
        const events = ['a', 'b', 'c'].map((x) => ({ type: 'N', data: { c, x } }));
        await writer.append('acme', 'chat-200', events, { expectedVersion: c * 3 });
      }
      const request = ['call', 'request'].map((x) => ({ type: 'N', data: { x } }));
      const held = (await writer.append('acme', 'chat-200', request, { expectedVersion: 600 })).events[0]!;
      await client.connect();
      const reader = new MongoEventStore(client.db(dbName), { reads: 'buckets' });
      await reader.init();
      finds.length = 0;
      const after = await reader.read('acme', 'chat-200', { fromVersion: 602, fromCommit: held.commitId });
      expect(after.map((e) => e.version)).toEqual([602]);
      // The commit by its id, then the next one's _id (none: the end).
      expect(finds).toEqual([{ c: held.commitId }, { _id: commitKey('acme', 'chat-200', 603) }]);
    } finally {
      await writer.db.dropDatabase();
      await Promise.all([writer.close(), client.close()]);
    }
  });
});
