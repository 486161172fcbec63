import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';
import type { PlacedPage } from '../event-store/index.js';
import type { LogPageDocument } from './commit-document.js';
import { MongoEventStore } from './mongo-event-store.js';

/**
 * Sequencers of several processes that tell each other their pages (as the relays' notices do),
 * racing one that discovers everyone's commits: each commit is placed exactly once, the pages
 * follow one another without a gap, and a told page serves reads without a query.
 */
describe('MongoDB sequencers told of each other pages', () => {
  const connectAll = async (n: number) => {
    const url = mongoUrlFor(uniqueName('told'));
    const stores = await Promise.all(
      Array.from({ length: n }, () =>
        MongoEventStore.connect(url, { sequencer: { discoveryIntervalMs: 60_000, idleDiscoveryMs: 60_000 } }),
      ),
    );
    /** Tells every other store of a page, like a notice over NATS (some notices lost on purpose). */
    const tell = (from: number, lose: (page: PlacedPage) => boolean) => (page: PlacedPage) => {
      if (lose(page)) return;
      const wire = JSON.parse(JSON.stringify(page)) as PlacedPage;
      stores.forEach((s, i) => i !== from && s.learnPlaced(wire));
    };
    return { stores, tell, cleanup: async () => stores[0]!.db.dropDatabase() };
  };

  it('places each commit exactly once, in pages without gaps, while notices are lost or late and a discoverer races', async () => {
    const { stores, tell, cleanup } = await connectAll(3);
    try {
      const [a, b, discoverer] = stores as [MongoEventStore, MongoEventStore, MongoEventStore];
      // Every fifth page's notice is lost; the rest arrive.
      const lose = (page: PlacedPage) => page.start % 5 === 0;
      const writer = async (store: MongoEventStore, me: number, stream: string) => {
        for (let i = 0; i < 12; i++) {
          await store.append('acme', stream, [{ type: 'Said', data: { i } }]);
          // Shared streams too: the predecessor of a commit may be another process's.
          await store.append('acme', 'chat-shared', [{ type: 'Said', data: { me, i } }]);
          await store.sequence({ ownOnly: true, onPlaced: tell(me, lose) });
        }
      };
      let racing = true;
      const discovering = (async () => {
        while (racing) await discoverer.sequence({ discover: true, onPlaced: tell(2, lose) });
      })();
      try {
        await Promise.all([writer(a, 0, 'chat-a'), writer(b, 1, 'chat-b')]);
      } finally {
        racing = false;
        await discovering;
      }
      for (const store of stores) while ((await store.sequence({ discover: true })) > 0);

      const pages = await a.db.collection<LogPageDocument>('log_pages').find({}).sort({ _id: 1 }).toArray();
      const placed = pages.flatMap((p) => p.commits.map((c) => c.id));
      expect(new Set(placed).size).toBe(placed.length);
      expect(placed.length).toBe(12 * 4);
      pages.forEach((p, i) => expect(p.start).toBe(i === 0 ? 1 : pages[i - 1]!.end + 1));
      const unplaced = await a.db.collection('commits').countDocuments({ q: 1 });
      expect(unplaced).toBe(0);

      // The log as each process reads it: every event once, each stream in version order.
      const log = await discoverer.readAll({ after: 0, limit: 1000, scope: 'all-tenants' });
      expect(log.events.map((e) => e.globalPosition)).toEqual(log.events.map((_, i) => i + 1));
      const shared = log.events.filter((e) => e.streamName === 'chat-shared').map((e) => e.version);
      expect(shared).toEqual(shared.map((_, i) => i + 1));
    } finally {
      await cleanup();
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("a told page's events and positions are known without a query, and equal the log's; another store's pages are ignored", async () => {
    const { stores, tell, cleanup } = await connectAll(2);
    try {
      const [writer, reader] = stores as [MongoEventStore, MongoEventStore];
      const { events } = await writer.append('acme', 'chat-1', [{ type: 'Said', data: { n: 1 } }]);
      await writer.sequence({ ownOnly: true, onPlaced: tell(0, () => false) });
      expect(reader.placedPosition(events[0]!.eventId)).toBe(1);
      // A page of another store's log (two databases on one NATS) is not taken in.
      reader.learnPlaced({
        log: 'another-store',
        start: 2,
        end: 2,
        commits: [],
        events: [{ ...events[0]!, eventId: 'x', globalPosition: 2 }],
      });
      expect(reader.placedPosition('x')).toBeUndefined();
      const told = await reader.readAll({ after: 0, limit: 10, scope: 'all-tenants' });
      const read = await reader.readAll({ after: 0, limit: 10, scope: { tenantId: 'acme' } });
      expect(told).toEqual(read);
    } finally {
      await cleanup();
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('a process that never placed a page reads told pages with no query, and finds the end of the log with one probe, not a scan', async () => {
    const url = mongoUrlFor(uniqueName('told_reader'));
    const writer = await MongoEventStore.connect(url);
    const client = new MongoClient(url, { monitorCommands: true });
    await client.connect();
    const reader = new MongoEventStore(client.db());
    await reader.init();
    try {
      const commands: string[] = [];
      client.on('commandStarted', (e) =>
        commands.push(`${e.commandName} ${String(e.command[e.commandName])}`),
      );
      for (let n = 1; n <= 3; n++) {
        await writer.append('acme', 'chat-1', [{ type: 'Said', data: { n } }]);
        await writer.sequence({
          ownOnly: true,
          onPlaced: (page) => reader.learnPlaced(JSON.parse(JSON.stringify(page)) as PlacedPage),
        });
      }
      const told = await reader.readAll({ after: 0, limit: 100, scope: 'all-tenants' });
      expect(told.events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect(commands).toEqual([]);
      const end = await reader.readAll({ after: told.lastPosition, limit: 100, scope: 'all-tenants' });
      expect(end).toEqual({ events: [], lastPosition: 3 });
      expect(commands).toEqual(['find log_pages']);
    } finally {
      await writer.db.dropDatabase();
      await writer.close();
      await client.close();
    }
  });

  it('a sequencer that loses a position to a page whose notice is on its way waits for it and places after it, without probing the log', async () => {
    const url = mongoUrlFor(uniqueName('told_collide'));
    const client = new MongoClient(url, { monitorCommands: true });
    await client.connect();
    const a = new MongoEventStore(client.db());
    await a.init();
    const b = await MongoEventStore.connect(url);
    try {
      const wire = (page: PlacedPage) => JSON.parse(JSON.stringify(page)) as PlacedPage;
      await a.append('acme', 'chat-a', [{ type: 'Said', data: { n: 1 } }]);
      await a.sequence({ ownOnly: true, onPlaced: (page) => b.learnPlaced(wire(page)) });
      await b.append('acme', 'chat-b', [{ type: 'Said', data: { n: 1 } }]);
      await a.append('acme', 'chat-a', [{ type: 'Said', data: { n: 2 } }], { expectedVersion: 1 });
      // b wins position 2; its notice reaches a 20 ms later.
      await b.sequence({
        ownOnly: true,
        onPlaced: (page) => setTimeout(() => a.learnPlaced(wire(page)), 20),
      });
      const commands: string[] = [];
      client.on('commandStarted', (e) =>
        commands.push(`${e.commandName} ${String(e.command[e.commandName])}`),
      );
      expect(await a.sequence({ ownOnly: true })).toBe(1);
      expect(commands.filter((c) => c.startsWith('find'))).toEqual([]);
      const log = await b.readAll({ after: 0, limit: 10, scope: { tenantId: 'acme' } });
      expect(log.events.map((e) => `${e.streamName}@${e.version}:${e.globalPosition}`)).toEqual([
        'chat-a@1:1',
        'chat-b@1:2',
        'chat-a@2:3',
      ]);
    } finally {
      await b.db.dropDatabase();
      await b.close();
      await client.close();
    }
  });
});
