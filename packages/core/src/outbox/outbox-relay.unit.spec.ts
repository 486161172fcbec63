import { describe, expect, it } from 'vitest';
import { InMemoryEventBus } from '../bus/index.js';
import type { RecordedEvent } from '../typing/index.js';
import { eventuallyTrue } from '../testing/index.js';
import { InMemoryEventStore } from '../event-store/index.js';
import { OutboxRelay } from './outbox-relay.js';
import { InMemoryCheckpointStore, InMemoryLeaseStore } from './ports.js';

const setup = () => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus();
  const checkpoints = new InMemoryCheckpointStore();
  const leases = new InMemoryLeaseStore();
  return { store, bus, checkpoints, leases };
};

describe('outbox relay', () => {
  it('delivers committed events to consumers in each stream order, and resumes from its checkpoint', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const seen: RecordedEvent[] = [];
    await bus.consume({ name: 'audit' }, async (d) => {
      seen.push(d.event);
    });
    await store.append('acme', 'order-1', [{ type: 'Placed', data: { n: 1 } }]);
    await store.append('acme', 'order-2', [{ type: 'Placed', data: { n: 2 } }]);
    await store.append('acme', 'order-1', [
      { type: 'Paid', data: {} },
      { type: 'Shipped', data: {} },
    ]);

    const first = new OutboxRelay({ store, bus, checkpoints, leases, batchSize: 2, idleMs: 10 });
    await first.drain();
    expect(await checkpoints.load('outbox')).toBe(4);
    await eventuallyTrue(() => seen.length === 4);
    expect(seen.map((e) => `${e.streamName}@${e.version}`)).toEqual([
      'order-1@1',
      'order-2@1',
      'order-1@2',
      'order-1@3',
    ]);

    // A relay started later publishes only what came after the checkpoint.
    await store.append('acme', 'order-2', [{ type: 'Paid', data: {} }]);
    const second = new OutboxRelay({ store, bus, checkpoints, leases, idleMs: 10 });
    second.start();
    await eventuallyTrue(() => seen.length === 5);
    await store.append('acme', 'order-3', [{ type: 'Placed', data: {} }]);
    await eventuallyTrue(() => seen.length === 6);
    await second.stop();
    expect(second.stats.published).toBe(2);
    expect(new Set(seen.map((e) => e.eventId)).size).toBe(6);
    await bus.close();
  });

  it('only the lease holder relays; when it stops, another takes over', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const published: string[] = [];
    const countingBus = Object.assign(Object.create(bus) as InMemoryEventBus, {
      publish: async (events: RecordedEvent[]) => {
        published.push(...events.map((e) => e.eventId));
        await bus.publish(events);
      },
    });
    // The lease decides who relays the log; the fast path (each process's own commits, whoever
    // holds the lease) is off here, so every publish counted is a relay round's.
    const relayOptions = { store, bus: countingBus, checkpoints, leases, idleMs: 10, leaseTtlMs: 200 };
    const a = new OutboxRelay({ ...relayOptions, publishOnCommit: false });
    const b = new OutboxRelay({ ...relayOptions, publishOnCommit: false });
    a.start();
    await eventuallyTrue(() => a.stats.holdsLease);
    b.start();
    await store.append('acme', 'doc-1', [{ type: 'A', data: {} }]);
    await eventuallyTrue(() => published.length === 1);
    expect(b.stats.holdsLease).toBe(false);
    expect(b.stats.published).toBe(0);

    await a.stop();
    await store.append('acme', 'doc-1', [{ type: 'B', data: {} }]);
    await eventuallyTrue(() => published.length === 2, 3_000);
    expect(b.stats.holdsLease).toBe(true);
    await b.stop();
    expect(new Set(published).size).toBe(2);
    await bus.close();
  });

  it('an idle relay has saved its checkpoint, so a crash then republishes nothing', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const relay = new OutboxRelay({ store, bus, checkpoints, leases, idleMs: 10, checkpointEveryMs: 60_000 });
    relay.start();
    await eventuallyTrue(() => relay.stats.holdsLease);
    await store.append('acme', 'doc-1', [{ type: 'A', data: {} }]);
    await store.append('acme', 'doc-2', [
      { type: 'B', data: {} },
      { type: 'C', data: {} },
    ]);
    await eventuallyTrue(async () => (await checkpoints.load('outbox')) === 3);
    expect(relay.stats.published).toBe(3);
    await relay.stop();
    await bus.close();
  });

  it('stop() returns only after what was committed before it is published', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const relay = new OutboxRelay({ store, bus, checkpoints, leases, idleMs: 60_000 });
    relay.start();
    await eventuallyTrue(() => relay.stats.holdsLease);
    await new Promise((r) => setTimeout(r, 20));
    await store.append('acme', 'doc-1', [
      { type: 'A', data: {} },
      { type: 'B', data: {} },
    ]);
    await relay.stop();
    expect(await checkpoints.load('outbox')).toBe(2);
    await bus.close();
  });

  it('fast path: publishes a commit as soon as it is durable, before any round, and the round later publishes it again under the same ids (stored once)', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const published: string[] = [];
    const countingBus = Object.assign(Object.create(bus) as InMemoryEventBus, {
      publish: async (events: RecordedEvent[]) => {
        published.push(...events.map((e) => e.eventId));
        await bus.publish(events);
      },
    });
    const seen: string[] = [];
    await bus.consume({ name: 'turns' }, async (d) => {
      seen.push(d.event.eventId);
    });
    // A long idle wait: only the fast path can publish within the test's first wait.
    const relay = new OutboxRelay({ store, bus: countingBus, checkpoints, leases, idleMs: 60_000 });
    relay.start();
    await eventuallyTrue(() => relay.stats.rounds > 0);
    const { events } = await store.append('acme', 'order-1', [{ type: 'Placed', data: {} }]);
    // Told synchronously within the append: the publish is under way before the caller resumes.
    expect(published).toEqual([events[0]!.eventId]);
    await eventuallyTrue(() => seen.length === 1);
    await relay.drain();
    expect(published).toEqual([events[0]!.eventId, events[0]!.eventId]);
    await relay.stop();
    expect(seen).toEqual([events[0]!.eventId]);
    await bus.close();
  });

  it('fast path off: nothing is published before the relay reads the log', async () => {
    const { store, bus, checkpoints, leases } = setup();
    const published: string[] = [];
    const countingBus = Object.assign(Object.create(bus) as InMemoryEventBus, {
      publish: async (events: RecordedEvent[]) => {
        published.push(...events.map((e) => e.eventId));
        await bus.publish(events);
      },
    });
    const relay = new OutboxRelay({ store, bus: countingBus, checkpoints, leases, publishOnCommit: false });
    relay.start();
    await relay.stop();
    await store.append('acme', 'order-1', [{ type: 'Placed', data: {} }]);
    expect(published).toEqual([]);
    await bus.close();
  });

  it("under a steady stream of wake-up notices the holder still lets its sequencer look for other processes' commits at least every idleMs", async () => {
    const { store, bus, checkpoints, leases } = setup();
    const asked: Array<boolean | undefined> = [];
    const recording = Object.assign(Object.create(store) as InMemoryEventStore, {
      sequence: async (options?: { ownOnly?: boolean }) => {
        asked.push(options?.ownOnly);
        return 0;
      },
    });
    let wake: (() => void) | undefined;
    const wakeups = {
      notify: () => undefined,
      listen: (onWake: () => void) => {
        wake = onWake;
        return () => undefined;
      },
    };
    const relay = new OutboxRelay({ store: recording, bus, checkpoints, leases, wakeups, idleMs: 50 });
    relay.start();
    await eventuallyTrue(() => relay.stats.holdsLease);
    const notices = setInterval(() => wake?.(), 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    asked.length = 0;
    await new Promise((resolve) => setTimeout(resolve, 300));
    clearInterval(notices);
    await relay.stop();
    expect(asked.filter((ownOnly) => ownOnly === true).length).toBeGreaterThan(10);
    expect(asked.filter((ownOnly) => !ownOnly).length).toBeGreaterThanOrEqual(3);
    await bus.close();
  });
});
