import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { eventually, mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../typing/index.js';
import {
  MongoCheckpointStore,
  MongoDeadLetterStore,
  MongoEventStore,
  MongoInbox,
  MongoLeaseStore,
} from '../mongodb/index.js';
import { OutboxRelay } from '../outbox/index.js';
import { NatsEventBus } from './index.js';

/**
 * Two processes' worth of store, bus and relay on one log: the relay without the lease places its
 * own process's appends and wakes the holder, which publishes them long before its idle poll.
 */
describe('outbox relays woken across processes over NATS', () => {
  const mongoUrl = mongoUrlFor(uniqueName('relay_wake'));
  const streamName = uniqueName('RELAY_WAKE').toUpperCase();
  const subjectPrefix = `t.${uniqueName('rw')}`;
  /** Far above what the test waits: only a wake-up can explain a prompt publish. */
  const IDLE_MS = 10_000;
  const sides: Array<{ store: MongoEventStore; bus: NatsEventBus; relay: OutboxRelay }> = [];

  const side = async (publishOnCommit = false) => {
    // Discovery of other processes' commits only every minute: the holder cannot find them itself.
    const store = await MongoEventStore.connect(mongoUrl, {
      sequencer: { discoveryIntervalMs: 60_000, idleDiscoveryMs: 60_000 },
    });
    const bus = await NatsEventBus.connect({
      servers: testInfra().natsUrl,
      streamName,
      subjectPrefix,
      inbox: new MongoInbox(store.db),
      deadLetters: new MongoDeadLetterStore(store.db),
    });
    const relay = new OutboxRelay({
      store,
      bus,
      checkpoints: new MongoCheckpointStore(store.db),
      leases: new MongoLeaseStore(store.db),
      idleMs: IDLE_MS,
      leaseTtlMs: 60_000,
      wakeups: bus.relayWakeups('outbox'),
      // The wake-ups under test are what publishes a commit the fast path did not (it is off
      // here, but in the last case, where both paths publish the same events).
      publishOnCommit,
    });
    sides.push({ store, bus, relay });
    return { store, bus, relay };
  };

  beforeAll(async () => {
    const holder = await side();
    holder.relay.start();
    await eventually(() => expect(holder.relay.stats.holdsLease).toBe(true), { timeoutMs: 10_000 });
    // Discovery would also place the other side's commits: let the holder's first (discovering) rounds pass.
    await new Promise((resolve) => setTimeout(resolve, 300));
  });

  afterAll(async () => {
    for (const { relay, bus } of sides) {
      await relay.stop();
      await bus.close();
    }
    const nc = await connect({ servers: testInfra().natsUrl });
    await (await jetstreamManager(nc)).streams.delete(streamName).catch(() => false);
    await nc.close();
    await sides[0]?.store.db.dropDatabase();
    for (const { store } of sides) await store.close();
  });

  it('an append in the process without the lease is published at once, once, in each stream order', async () => {
    const other = await side();
    other.relay.start();
    await new Promise((resolve) => setTimeout(resolve, 200)); // its first lease check
    expect(other.relay.stats.holdsLease).toBe(false);

    const seen: RecordedEvent[] = [];
    const consumer = await sides[0]!.bus.consume({ name: 'wake_check', ackWaitMs: 5_000 }, async (d) => {
      seen.push(d.event);
    });
    const started = Date.now();
    await other.store.append('acme', 'chat-1', [{ type: 'Said', data: { n: 1 } }]);
    await other.store.append('acme', 'chat-1', [{ type: 'Said', data: { n: 2 } }], { expectedVersion: 1 });
    await eventually(() => expect(seen.map((e) => e.version)).toEqual([1, 2]), { timeoutMs: 5_000 });
    // Well under the holder's idle poll and its discovery interval.
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(sides[0]!.relay.stats.published).toBe(2);
    expect(other.relay.stats.published).toBe(0);
    expect(seen.map((e) => e.globalPosition)).toEqual([1, 2]);
    await consumer.stop();
  });

  it('fast path: an append is on the bus before the relay places it, and the relay publishing it again stores nothing twice', async () => {
    const other = await side(true);
    other.relay.start();
    const seen: RecordedEvent[] = [];
    const consumer = await sides[0]!.bus.consume({ name: 'fast_check', ackWaitMs: 5_000 }, async (d) => {
      if (d.event.streamName === 'chat-2') seen.push(d.event);
    });
    await other.store.append('acme', 'chat-2', [{ type: 'Said', data: { n: 1 } }]);
    await other.store.append('acme', 'chat-2', [{ type: 'Said', data: { n: 2 } }], { expectedVersion: 1 });
    await eventually(() => expect(seen.map((e) => e.version)).toEqual([1, 2]), { timeoutMs: 5_000 });
    // Published before it was placed: no global position on the bus.
    expect(seen.map((e) => e.globalPosition)).toEqual([undefined, undefined]);
    expect(other.relay.fastPath.published).toBe(2);
    // The holder publishes them from the log too; JetStream keeps one message per event id.
    await eventually(() => expect(sides[0]!.relay.stats.published).toBeGreaterThanOrEqual(4), {
      timeoutMs: 5_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.map((e) => e.version)).toEqual([1, 2]);
    const nc = await connect({ servers: testInfra().natsUrl });
    const info = await (await jetstreamManager(nc)).streams.info(streamName);
    await nc.close();
    // chat-1's two from the case before, chat-2's two: none twice.
    expect(info.state.messages).toBe(4);
    await consumer.stop();
  });
});
