/**
 * Commit-to-consumer latency through the outbox: Keel's append → the OutboxRelay running in this
 * process (sequence, read the global log, publish) → JetStream → a NatsEventBus consumer; against
 * a raw `js.publish` + pull consumer of the same payload, and against a raw dual write (insertOne,
 * then js.publish: what the outbox replaces, without its guarantee).
 */
import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import type { EventBus, EventStore, EventStoreAdapter, RecordedEvent } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryDeadLetters,
  InMemoryEventStore,
  InMemoryInbox,
  InMemoryLeaseStore,
  OutboxRelay,
} from '@keel/core';
import { MongoCheckpointStore, MongoEventStore, MongoLeaseStore } from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';
import { Arrivals } from './lib/arrivals.js';
import { CallTimes } from './lib/call-times.js';
import { CommandMonitor, perOperation } from './lib/command-monitor.js';
import { messageEvent } from './lib/fixtures.js';
import type { BenchInfra } from './lib/infra.js';
import { freshName, freshStore } from './lib/infra.js';
import type { Batch, Contender } from './lib/interleave.js';
import { interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';
import { rawJetStream } from './outbox-baseline.js';

const TENANT = 'bench';
const ROUNDS = 10;
const SEQUENTIAL_BATCH = 50;
const BURST = 50;
const BURST_ROUNDS = 4;

/** The payload a raw publisher would send: a recorded event as JSON, the same as Keel publishes. */
const rawPayload = (eventId: string, stream: string, version: number): string => {
  const event = messageEvent(stream, version);
  const recorded: RecordedEvent = {
    eventId,
    type: event.type,
    data: event.data,
    metadata: event.metadata ?? {},
    tenantId: TENANT,
    streamName: stream,
    version,
    globalPosition: version,
    commitId: randomUUID(),
    recordedAt: new Date().toISOString(),
  };
  return JSON.stringify(recorded);
};

/** A dual-write baseline's document: the event as published, in a collection with the same unique index. */
interface RawCommit {
  _id: string;
  t: string;
  s: string;
  f: number;
  body: string;
}

interface Setup {
  store: MongoEventStore;
  /** Keel's dev-mode store with its own relay on the same bus: the outbox path without MongoDB. */
  memoryStore: InMemoryEventStore;
  /** Called with each Keel event id once its append has returned. */
  onCommitted?: (eventId: string) => void;
  arrivals: Arrivals;
  raw: Awaited<ReturnType<typeof rawJetStream>>;
  rawCommits: Collection<RawCommit>;
  versions: Map<string, number>;
}

/** One end-to-end delivery per contender, in sequence, or `writers` at once for a burst. */
function contenders(setup: Setup, writers: number, perBatch: number, prefix: string): Contender[] {
  const { arrivals, raw, rawCommits, versions } = setup;
  const keelOne =
    (store: EventStore, key: string) =>
    async (stream: string): Promise<number> => {
      const eventId = randomUUID();
      const version = versions.get(`${key}:${stream}`) ?? 0;
      const start = now();
      const result = await store.append(TENANT, stream, [{ ...messageEvent(stream, version + 1), eventId }], {
        expectedVersion: version,
      });
      setup.onCommitted?.(eventId);
      versions.set(`${key}:${stream}`, result.nextExpectedVersion);
      return (await arrivals.when(eventId)) - start;
    };
  const rawOne = async (stream: string): Promise<number> => {
    const eventId = randomUUID();
    const version = (versions.get(`raw:${stream}`) ?? 0) + 1;
    versions.set(`raw:${stream}`, version);
    const body = rawPayload(eventId, stream, version);
    const start = now();
    await raw.publish(body, eventId);
    return (await arrivals.when(eventId)) - start;
  };
  const dualOne = async (stream: string): Promise<number> => {
    const eventId = randomUUID();
    const version = (versions.get(`dual:${stream}`) ?? 0) + 1;
    versions.set(`dual:${stream}`, version);
    const body = rawPayload(eventId, stream, version);
    const start = now();
    await rawCommits.insertOne({ _id: `${TENANT}:${eventId}`, t: TENANT, s: stream, f: version, body });
    await raw.publish(body, eventId);
    return (await arrivals.when(eventId)) - start;
  };
  const batch = (one: (stream: string) => Promise<number>) => async (): Promise<Batch> => {
    const latencies: number[] = [];
    const start = now();
    for (let k = 0; k < perBatch; k++) {
      latencies.push(
        ...(await Promise.all(Array.from({ length: writers }, (_, w) => one(`conv-${prefix}${w}`)))),
      );
    }
    return { latencies, wallMs: now() - start };
  };
  return [
    { label: 'keel', batch: batch(keelOne(setup.store, 'keel')) },
    { label: 'keel, in-memory store', batch: batch(keelOne(setup.memoryStore, 'memory')) },
    { label: 'raw', batch: batch(rawOne) },
    { label: 'raw insert+publish', batch: batch(dualOne) },
  ];
}

const rowsOf = (collected: Map<string, { latencies: number[]; wallMs: number }>, scenario: string): Row[] =>
  [...collected].map(([variant, { latencies, wallMs }]) => {
    const s = summarize(latencies);
    return {
      scenario,
      variant,
      n: s.n,
      p50Ms: s.p50,
      p99Ms: s.p99,
      opsPerSec: (latencies.length / wallMs) * 1000,
    };
  });

/**
 * Delivers `count` events one by one through a relay whose collaborators are timed, to see where
 * the time goes. Also counts the relay's idle waits that began while an event was committed but not
 * yet published (they return at once: the relay waits for appends after the count it last saw).
 */
async function breakdown(setup: Setup, bus: EventBus, count: number, mongoUrl: string): Promise<string> {
  const times = new CallTimes();
  // The same database through a client that records every command (appends and relay alike).
  const monitor = new CommandMonitor(mongoUrl);
  await monitor.client.connect();
  const store = new MongoEventStore(monitor.client.db(setup.store.db.databaseName));
  const committed = new Set<string>();
  const published = new Set<string>();
  let waits = 0;
  let missed = 0;
  const measured: Setup = {
    ...setup,
    store,
    onCommitted: (id) => {
      if (!published.has(id)) committed.add(id);
    },
  };
  const relay = new OutboxRelay({
    store: times.wrap<EventStoreAdapter>('store', store, (method) => {
      if (method !== 'waitForAppend') return;
      waits++;
      if (committed.size > 0) missed++;
    }),
    bus: times.wrap<EventBus>('bus', bus, (method, args) => {
      if (method !== 'publish') return;
      for (const event of args[0] as RecordedEvent[]) {
        published.add(event.eventId);
        committed.delete(event.eventId);
      }
    }),
    checkpoints: times.wrap('checkpoints', new MongoCheckpointStore(store.db)),
    leases: new MongoLeaseStore(store.db),
    name: 'outbox',
  });
  const [keel] = contenders(measured, 1, count, 'breakdown');
  relay.start();
  try {
    monitor.reset();
    const { latencies } = await keel!.batch();
    const commands = perOperation(monitor.snapshot(), count);
    const perEvent = (name: string): string => {
      const entry = times.calls.get(name) ?? { count: 0, ms: 0 };
      return `${name.split('.')[1]} ${(entry.ms / count).toFixed(1)} ms`;
    };
    const rounds = times.calls.get('store.sequence')?.count ?? 0;
    const idle =
      waits === 0
        ? 'The relay never went idle: each round outlasted the delivery and the next append, so every round found the next commit.'
        : `${missed} of ${waits} idle waits began with a committed, unpublished event (the relay passes the append ` +
          `count it read before its round, so such a wait returns at once instead of sleeping the 100 ms idle timeout); ` +
          `${latencies.filter((ms) => ms >= 100).length} of ${count} deliveries took 100 ms or more.`;
    return (
      `Where the time goes (${count} more sequential deliveries, relay calls timed, MongoDB commands recorded): p50 ` +
      `${median(latencies).toFixed(1)} ms; ${(rounds / count).toFixed(2)} relay rounds per event; time per event in ${[
        'store.sequence',
        'store.readAll',
        'bus.publish',
        'checkpoints.load',
        'checkpoints.save',
      ]
        .map(perEvent)
        .join(', ')}. MongoDB commands per event (append + relay), count and mean time: ${commands}. ${idle}`
    );
  } finally {
    await relay.stop();
    await monitor.client.close();
  }
}

export const outboxBench: Bench = {
  name: 'outbox',
  needsNats: true,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const { store, drop } = await freshStore(infra, 'bench_outbox');
    const arrivals = new Arrivals();
    const keelStream = freshName('BENCH_OUTBOX').toUpperCase();
    const prefix = freshName('bench');
    const bus = await NatsEventBus.connect({
      servers: infra.natsUrl,
      streamName: keelStream,
      subjectPrefix: `${prefix}.keel`,
      inbox: new InMemoryInbox(),
      deadLetters: new InMemoryDeadLetters(),
      connectionName: 'keel-bench',
    });
    const raw = await rawJetStream(
      infra.natsUrl,
      freshName('BENCH_RAW').toUpperCase(),
      `${prefix}.raw`,
      (id) => arrivals.receive(id),
    );
    const relay = new OutboxRelay({
      store,
      bus,
      checkpoints: new MongoCheckpointStore(store.db),
      leases: new MongoLeaseStore(store.db),
    });
    const memoryStore = new InMemoryEventStore();
    const memoryRelay = new OutboxRelay({
      store: memoryStore,
      bus,
      checkpoints: new InMemoryCheckpointStore(),
      leases: new InMemoryLeaseStore(),
      name: 'outbox-memory',
    });
    try {
      const consumer = await bus.consume({ name: 'bench' }, async ({ event }) =>
        arrivals.receive(event.eventId),
      );
      const rawCommits = store.db.collection<RawCommit>('raw_commits');
      await rawCommits.createIndex({ t: 1, s: 1, f: 1 }, { unique: true });
      const setup: Setup = { store, memoryStore, arrivals, raw, rawCommits, versions: new Map() };
      relay.start();
      memoryRelay.start();

      const rows: Row[] = [];
      const sequential = await interleave(contenders(setup, 1, SEQUENTIAL_BATCH, 'seq'), { rounds: ROUNDS });
      rows.push(...rowsOf(sequential, 'sequential, 1 event per append'));
      const commitsAfterSequential = await store.db.collection('commits').countDocuments();
      const burst = await interleave(contenders(setup, BURST, 1, 'burst'), { rounds: BURST_ROUNDS });
      rows.push(...rowsOf(burst, `burst of ${BURST} appends at once`));
      await relay.stop();
      await memoryRelay.stop();
      await consumer.stop();

      const keelSeq = sequential.get('keel')!.latencies;
      const firstHalf = median(keelSeq.slice(0, keelSeq.length / 2));
      const secondHalf = median(keelSeq.slice(keelSeq.length / 2));
      const slow = keelSeq.filter((ms) => ms >= 100).length;
      const memorySeq = sequential.get('keel, in-memory store')!.latencies;
      const memorySlow = memorySeq.filter((ms) => ms >= 90).length;
      const consumer2 = await bus.consume(
        { name: 'bench-breakdown', deliverFrom: 'new' },
        async ({ event }) => arrivals.receive(event.eventId),
      );
      const where = await breakdown(setup, bus, 200, infra.mongoUrl);
      await consumer2.stop();
      const withRatio = withRatios(rows);
      return {
        name: 'outbox',
        title: 'Outbox: commit-to-consumer latency vs raw JetStream',
        description: [
          `Latency from the start of the write to the consumer's handler receiving the event. keel = ` +
            `MongoEventStore.append → OutboxRelay (same process, default settings: wakes on an append in this process, ` +
            `else polls every 100 ms) → NatsEventBus.publish → JetStream → NatsEventBus consumer (default settings: ` +
            `explicit ack, 1 in flight, in-memory inbox). raw = js.publish of the same JSON payload with Nats-Msg-Id → ` +
            `a durable pull consumer with the same ack settings (plain @nats-io client, bench/outbox-baseline.ts). ` +
            `raw insert+publish = a raw insertOne into MongoDB, then js.publish (a dual write: what the outbox replaces, ` +
            `without its guarantee).`,
          `Sequential: ${ROUNDS} rounds of ${SEQUENTIAL_BATCH} deliveries per contender after 1 warm-up round, ` +
            `interleaved. Burst: ${BURST} writers append (or publish) at once, ${BURST_ROUNDS} rounds after a warm-up; ` +
            `latency per event, ops/s = events delivered per second. The relay keeps running (idle) during the raw rounds.`,
        ],
        rows: withRatio,
        notes: [
          `Keel sequential p50 over the first half of the deliveries ${firstHalf.toFixed(1)} ms, over the second half ` +
            `${secondHalf.toFixed(1)} ms (the log held ${commitsAfterSequential} commits at the end); ${slow} of ` +
            `${keelSeq.length} deliveries took 100 ms or more.`,
          `keel, in-memory store (the relay and bus without MongoDB): ${memorySlow} of ${memorySeq.length} sequential ` +
            `deliveries took 90 ms or more (the relay's 100 ms idle timeout).`,
          where,
        ],
      };
    } finally {
      await relay.stop().catch(() => undefined);
      await memoryRelay.stop().catch(() => undefined);
      await bus.close().catch(() => undefined);
      await raw.close([keelStream]);
      await drop();
    }
  },
};
