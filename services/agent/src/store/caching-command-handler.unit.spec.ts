import type { Decider, EventData, EventStore, ReadStreamOptions } from '@keel/core';
import { CommandHandler, InMemoryEventBus, InMemoryEventStore, WatchedStreams } from '@keel/core';
import { describe, expect, it, vi } from 'vitest';
import { CachingCommandHandler } from './caching-command-handler.js';

interface Tally {
  total: number;
  items: number[];
}
type Added = EventData<'Added', { n: number }>;
const tally: Decider<Tally, { add: number }, Added> = {
  initialState: () => ({ total: 0, items: [] }),
  decide: (command) => [{ type: 'Added', data: { n: command.add } }],
  evolve: (state, event) => ({ total: state.total + event.data.n, items: [...state.items, event.data.n] }),
};

/** The store, counting the events each read returns and where it started. */
const countingStore = () => {
  const store = new InMemoryEventStore();
  const reads: Array<{ from: number; events: number }> = [];
  const read = store.read.bind(store);
  store.read = async (tenantId: string, streamName: string, options?: ReadStreamOptions) => {
    const events = await read(tenantId, streamName, options);
    reads.push({ from: options?.fromVersion ?? 1, events: events.length });
    return events;
  };
  return { store: store as EventStore, reads };
};

describe('CachingCommandHandler', () => {
  it('reads only the events after the state it remembers, and answers as the plain handler does', async () => {
    const { store, reads } = countingStore();
    const cached = new CachingCommandHandler(store, tally);
    for (let n = 1; n <= 5; n++) await cached.handle('acme', 'tally-1', { add: n });
    reads.length = 0;
    const loaded = await cached.load('acme', 'tally-1');
    expect(reads).toEqual([{ from: 6, events: 0 }]);
    expect(loaded.state).toEqual({ total: 15, items: [1, 2, 3, 4, 5] });
    expect(loaded.version).toBe(5);
    expect((await new CommandHandler(store, tally).load('acme', 'tally-1')).state).toEqual(loaded.state);
  });

  it("sees another writer's events (another process) and decides on top of them", async () => {
    const { store } = countingStore();
    const mine = new CachingCommandHandler(store, tally);
    const theirs = new CommandHandler(store, tally);
    await mine.handle('acme', 'tally-1', { add: 1 });
    await theirs.handle('acme', 'tally-1', { add: 10 });
    await theirs.handle('acme', 'tally-1', { add: 100 });
    expect((await mine.load('acme', 'tally-1')).state.total).toBe(111);
    const handled = await mine.handle('acme', 'tally-1', { add: 1000 });
    expect(handled.version).toBe(4);
    expect((await theirs.load('acme', 'tally-1')).state).toEqual({ total: 1111, items: [1, 10, 100, 1000] });
  });

  it('hands out copies: a caller changing its state changes no later load', async () => {
    const { store } = countingStore();
    const cached = new CachingCommandHandler(store, tally);
    const handled = await cached.handle('acme', 'tally-1', { add: 2 });
    handled.state.items.push(99);
    const loaded = await cached.load('acme', 'tally-1');
    loaded.state.items.push(98);
    expect((await cached.load('acme', 'tally-1')).state).toEqual({ total: 2, items: [2] });
  });

  it('keeps taking snapshots every `every` events, as the plain handler does', async () => {
    const { store } = countingStore();
    const cached = new CachingCommandHandler(store, tally, { snapshot: { name: 'tally', every: 3 } });
    for (let n = 1; n <= 7; n++) await cached.handle('acme', 'tally-1', { add: n });
    expect((await store.snapshots.load('acme', 'tally-1', 'tally'))?.version).toBe(6);
  });

  it('forgets the least recently used streams beyond its capacity, and still answers for them', async () => {
    const { store, reads } = countingStore();
    const cached = new CachingCommandHandler(store, tally, {}, 2);
    for (const id of ['a', 'b', 'c']) await cached.handle('acme', `tally-${id}`, { add: 1 });
    reads.length = 0;
    expect((await cached.load('acme', 'tally-a')).state.total).toBe(1);
    expect(reads).toEqual([{ from: 1, events: 1 }]);
  });
  it('appends a command on the state it remembers without reading the log; a stream that moved refuses it and it is decided again on a fresh load', async () => {
    const { store, reads } = countingStore();
    const mine = new CachingCommandHandler(store, tally);
    await mine.handle('acme', 'tally-1', { add: 1 });
    reads.length = 0;
    expect((await mine.handle('acme', 'tally-1', { add: 2 })).version).toBe(2);
    expect(reads).toEqual([]);
    await new CommandHandler(store, tally).handle('acme', 'tally-1', { add: 10 });
    reads.length = 0;
    const handled = await mine.handle('acme', 'tally-1', { add: 100 });
    expect(reads).toEqual([{ from: 3, events: 1 }]);
    expect(handled).toMatchObject({ version: 4, state: { total: 113, items: [1, 2, 10, 100] } });
  });

  it('does not trust a no-op or a refusal decided on the state it remembers: it reads the log and decides again', async () => {
    type Opened = EventData<'Opened', Record<string, never>>;
    type Step = EventData<'Step', Record<string, never>>;
    const door: Decider<{ open: boolean; steps: number }, 'open' | 'step' | 'stepIfOpen', Opened | Step> = {
      initialState: () => ({ open: false, steps: 0 }),
      decide: (command, state) => {
        if (command === 'open') return state.open ? [] : [{ type: 'Opened', data: {} }];
        if (!state.open && command === 'step') throw new Error('closed');
        return state.open ? [{ type: 'Step', data: {} }] : [];
      },
      evolve: (state, event) =>
        event.type === 'Opened' ? { ...state, open: true } : { ...state, steps: state.steps + 1 },
    };
    const { store } = countingStore();
    const mine = new CachingCommandHandler(store, door);
    await mine.handle('acme', 'door-1', 'stepIfOpen');
    await mine.load('acme', 'door-1');
    await new CommandHandler(store, door).handle('acme', 'door-1', 'open');
    expect((await mine.handle('acme', 'door-1', 'step')).version).toBe(2);
    await new CommandHandler(store, door).handle('acme', 'door-1', 'step');
    expect((await mine.handle('acme', 'door-1', 'stepIfOpen')).state).toEqual({ open: true, steps: 3 });
  });
  it('hands out the remembered state only at the exact version asked for', async () => {
    const { store, reads } = countingStore();
    const mine = new CachingCommandHandler(store, tally);
    await mine.handle('acme', 'tally-1', { add: 1 });
    await mine.handle('acme', 'tally-1', { add: 2 });
    reads.length = 0;
    expect(mine.rememberedAt('acme', 'tally-1', 2)).toEqual({
      state: { total: 3, items: [1, 2] },
      version: 2,
    });
    expect(mine.rememberedAt('acme', 'tally-1', 1)).toBeUndefined();
    expect(mine.rememberedAt('acme', 'tally-2', 0)).toBeUndefined();
    mine.rememberedAt('acme', 'tally-1', 2)!.state.items.push(99);
    expect(mine.rememberedAt('acme', 'tally-1', 2)!.state.items).toEqual([1, 2]);
    expect(reads).toEqual([]);
  });

  it('appends the first command of a stream it was told no one wrote with no read; a name taken after all is refused and decided on a read', async () => {
    const { store, reads } = countingStore();
    const mine = new CachingCommandHandler(store, tally);
    mine.rememberEmpty('acme', 'tally-new');
    expect((await mine.handle('acme', 'tally-new', { add: 1 })).version).toBe(1);
    expect(reads).toEqual([]);
    await new CommandHandler(store, tally).handle('acme', 'tally-taken', { add: 10 });
    reads.length = 0;
    mine.rememberEmpty('acme', 'tally-taken');
    expect((await mine.handle('acme', 'tally-taken', { add: 1 })).state).toEqual({
      total: 11,
      items: [10, 1],
    });
    expect(reads).toEqual([{ from: 1, events: 1 }]);
  });

  describe('with a watch on the bus (configuration streams)', () => {
    /** Another process: its own handler, publishing what it appends as a writer's fast path does. */
    const setup = (refreshAfterMs?: number) => {
      const { store, reads } = countingStore();
      const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
      const mine = new CachingCommandHandler(store, tally, {
        watched: new WatchedStreams(bus),
        maxRetries: 1,
        retryDelayMs: () => 0,
        ...(refreshAfterMs === undefined ? {} : { refreshAfterMs }),
      });
      const theirs = new CommandHandler(store, tally);
      const theirAdd = async (n: number, publish = true) => {
        const handled = await theirs.handle('acme', 'tally-1', { add: n });
        if (publish) await bus.publish(handled.events);
      };
      return { mine, theirAdd, reads };
    };

    it('a load reads nothing while the bus tells of no newer event, and reads once one arrives', async () => {
      const { mine, theirAdd, reads } = setup();
      await theirAdd(1);
      await mine.load('acme', 'tally-1');
      reads.length = 0;
      expect((await mine.load('acme', 'tally-1')).state.total).toBe(1);
      await mine.handle('acme', 'tally-1', { add: 2 });
      expect((await mine.load('acme', 'tally-1')).state.total).toBe(3);
      expect(reads).toEqual([]);
      await theirAdd(10);
      reads.length = 0;
      expect((await mine.load('acme', 'tally-1')).state).toEqual({ total: 13, items: [1, 2, 10] });
      expect(reads).toEqual([{ from: 3, events: 1 }]);
    });

    it('a command is never decided on the vouched state alone: refused at its version, it reads the log though the watch still vouches', async () => {
      const { mine, theirAdd, reads } = setup();
      await mine.load('acme', 'tally-1');
      await theirAdd(10, false); // its event has not arrived on the bus yet
      expect((await mine.load('acme', 'tally-1')).state.total).toBe(0); // the documented staleness
      reads.length = 0;
      const handled = await mine.handle('acme', 'tally-1', { add: 1 });
      expect(handled).toMatchObject({ version: 2, state: { total: 11, items: [10, 1] } });
      expect(reads).toEqual([{ from: 1, events: 1 }]);
    });

    it('a load served from memory after `refreshAfterMs` reads in the background, and does not wait for it', async () => {
      const { mine, theirAdd, reads } = setup(0);
      await mine.load('acme', 'tally-1');
      await theirAdd(5, false); // not on the bus: only a read finds it
      reads.length = 0;
      const served = mine.load('acme', 'tally-1');
      expect(reads).toEqual([]);
      expect((await served).state.total).toBe(0);
      await vi.waitFor(() => expect(reads).toEqual([{ from: 1, events: 1 }]));
      expect((await mine.load('acme', 'tally-1')).state.total).toBe(5);
    });
  });
});
