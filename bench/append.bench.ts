/**
 * Keel's append against the raw driver's `insertOne` of the same commit documents.
 *
 * Each writer owns a stream and appends with the exact version its previous append returned
 * (the command path). The raw baseline inserts documents of the same shape and size as Keel's
 * commit document (checked at start against a document Keel wrote) into a collection with the
 * same indexes as Keel's commits collection (read from the server at start); a third contender
 * has only the `_id` index, the least any insert pays.
 */
import { randomUUID } from 'node:crypto';
import type { Collection, IndexDescriptionInfo } from 'mongodb';
import type { EventData } from '@keel/core';
import { prepareAppend } from '@keel/core';
import type { CommitDocument } from '@keel/core/mongodb';
import { bucketOf, commitKey, MongoEventStore } from '@keel/core/mongodb';
import { CommandMonitor, perOperation } from './lib/command-monitor.js';
import { messageEvents } from './lib/fixtures.js';
import type { BenchInfra } from './lib/infra.js';
import { freshName, freshStore } from './lib/infra.js';
import type { Contender } from './lib/interleave.js';
import { concurrentWriters, interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';

const TENANT = 'bench';
const ROUNDS = 12;
const OPS_PER_BATCH = 100;

/** A commit document as Keel writes it: the raw baseline inserts exactly this shape. */
type RawCommit = CommitDocument;

const rawCommit = (stream: string, from: number, events: EventData[]): RawCommit => ({
  _id: commitKey(TENANT, stream, from),
  t: TENANT,
  s: stream,
  c: randomUUID(),
  f: from,
  v: from + events.length - 1,
  e: events.map((event) => ({
    i: randomUUID(),
    y: event.type,
    d: JSON.stringify(event.data),
    m: JSON.stringify(event.metadata ?? {}),
  })),
  at: new Date().toISOString(),
  q: 1,
  k: bucketOf(from),
});

/**
 * Fails when the raw document no longer matches what Keel writes (fields, key, size within 2%),
 * so the baseline cannot silently drift from the store it is compared with.
 */
async function checkSameShape(store: MongoEventStore): Promise<void> {
  const stream = 'conv-shape';
  const events = messageEvents(stream, 1, 3);
  await store.append(TENANT, stream, events, { expectedVersion: 0 });
  const keel = await store.db.collection<RawCommit>('commits').findOne({ t: TENANT, s: stream });
  const raw = rawCommit(stream, 1, events);
  const keys = (doc: object): string => Object.keys(doc).sort().join(',');
  const size = (doc: object): number => JSON.stringify(doc).length;
  if (
    !keel ||
    keel._id !== raw._id ||
    keys(keel) !== keys(raw) ||
    keys(keel.e[0]!) !== keys(raw.e[0]!) ||
    Math.abs(size(keel) / size(raw) - 1) > 0.02
  ) {
    throw new Error(
      `the raw baseline no longer matches Keel's commit document: keel ${JSON.stringify(keel)} vs raw ${JSON.stringify(raw)}`,
    );
  }
}

/** Creates on `target` the indexes `source` has (but `_id`, which every collection has); returns their names. */
async function copyIndexes(source: Collection<RawCommit>, target: Collection<RawCommit>): Promise<string[]> {
  const names: string[] = [];
  for (const index of (await source.indexes()) as IndexDescriptionInfo[]) {
    if (index.name === '_id_') continue;
    await target.createIndex(index.key, { name: index.name, ...(index.unique ? { unique: true } : {}) });
    names.push(`${index.name}${index.unique ? ' (unique)' : ''}`);
  }
  return names;
}

interface Scenario {
  events: number;
  writers: number;
}

const SCENARIOS: Scenario[] = [
  { events: 1, writers: 1 },
  { events: 10, writers: 1 },
  { events: 1, writers: 8 },
  { events: 10, writers: 8 },
];

const label = (s: Scenario): string =>
  `${s.events} event${s.events > 1 ? 's' : ''}/commit, ${s.writers} writer${s.writers > 1 ? 's' : ''}`;

async function measureScenario(
  store: MongoEventStore,
  raw: Collection<RawCommit>,
  rawIdOnly: Collection<RawCommit>,
  scenario: Scenario,
  index: number,
): Promise<Row[]> {
  const opsPerWriter = scenario.writers === 1 ? OPS_PER_BATCH : OPS_PER_BATCH / 4;
  const streams = Array.from({ length: scenario.writers }, (_, w) => `conv-s${index}w${w}`);
  const keelVersions = streams.map(() => 0);
  const rawVersions = streams.map(() => 0);
  const rawIdOnlyVersions = streams.map(() => 0);

  const keel: Contender = {
    label: 'keel',
    batch: () =>
      concurrentWriters(scenario.writers, opsPerWriter, async (w) => {
        const events = messageEvents(streams[w]!, keelVersions[w]! + 1, scenario.events);
        const result = await store.append(TENANT, streams[w]!, events, { expectedVersion: keelVersions[w]! });
        keelVersions[w] = result.nextExpectedVersion;
      }),
  };
  const rawInsert = (collection: Collection<RawCommit>, versions: number[], name: string): Contender => ({
    label: name,
    batch: () =>
      concurrentWriters(scenario.writers, opsPerWriter, async (w) => {
        const events = messageEvents(streams[w]!, versions[w]! + 1, scenario.events);
        await collection.insertOne(rawCommit(streams[w]!, versions[w]! + 1, events));
        versions[w] = versions[w]! + scenario.events;
      }),
  });
  const contenders = [
    keel,
    rawInsert(raw, rawVersions, 'raw'),
    rawInsert(rawIdOnly, rawIdOnlyVersions, 'raw, _id only'),
  ];
  const collected = await interleave(contenders, { rounds: ROUNDS });
  return contenders.map(({ label: variant }) => {
    const { latencies, wallMs, cpuMs } = collected.get(variant)!;
    const s = summarize(latencies);
    const opsPerSec = (latencies.length / wallMs) * 1000;
    return {
      scenario: label(scenario),
      variant,
      n: s.n,
      p50Ms: s.p50,
      p99Ms: s.p99,
      opsPerSec,
      eventsPerSec: opsPerSec * scenario.events,
      cpuUsPerOp: (cpuMs / latencies.length) * 1000,
    };
  });
}

/** Microseconds of CPU that Keel's append spends outside the driver (validation, serialization, ids). */
function cpuCostUs(events: number): { prepareUs: number; reparseUs: number } {
  const sample = messageEvents('conv-cpu', 1, events);
  const iterations = 2_000;
  const runs: number[] = [];
  const reparse: number[] = [];
  for (let run = 0; run < 5; run++) {
    let start = now();
    let prepared = prepareAppend(TENANT, 'conv-cpu', sample, 0);
    for (let k = 0; k < iterations; k++) prepared = prepareAppend(TENANT, 'conv-cpu', sample, 0);
    runs.push(((now() - start) / iterations) * 1000);
    // The append returns recorded events, parsed back from the stored JSON text.
    start = now();
    let parsed = 0;
    for (let k = 0; k < iterations; k++) {
      for (const p of prepared)
        parsed +=
          Object.keys(JSON.parse(p.dataJson) as object).length +
          Object.keys(JSON.parse(p.metadataJson) as object).length;
    }
    reparse.push(((now() - start) / iterations) * 1000);
    if (parsed === 0) throw new Error('nothing parsed');
  }
  return { prepareUs: median(runs), reparseUs: median(reparse) };
}

/** Round trips of one append with an exact, known expected version, seen by a monitored client. */
async function roundTrips(infra: BenchInfra): Promise<string> {
  const monitor = new CommandMonitor(infra.mongoUrl);
  const dbName = freshName('bench_append_rt');
  try {
    await monitor.client.connect();
    const store = new MongoEventStore(monitor.client.db(dbName));
    await store.init();
    let version = 0;
    for (let k = 0; k < 20; k++)
      version = (
        await store.append(TENANT, 'conv-rt', messageEvents('conv-rt', k, 1), { expectedVersion: version })
      ).nextExpectedVersion;
    monitor.reset();
    const ops = 200;
    for (let k = 0; k < ops; k++) {
      version = (
        await store.append(TENANT, 'conv-rt', messageEvents('conv-rt', k, 1), { expectedVersion: version })
      ).nextExpectedVersion;
    }
    return perOperation(monitor.snapshot(), ops);
  } finally {
    await monitor.client
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await monitor.client.close();
  }
}

export const appendBench: Bench = {
  name: 'append',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const { store, drop } = await freshStore(infra, 'bench_append');
    try {
      await checkSameShape(store);
      const raw = store.db.collection<RawCommit>('raw_commits');
      const rawIdOnly = store.db.collection<RawCommit>('raw_commits_id_only');
      const indexes = await copyIndexes(store.db.collection<RawCommit>('commits'), raw);
      await rawIdOnly.insertOne(rawCommit('conv-create', 1, messageEvents('conv-create', 1, 1)));

      const rows: Row[] = [];
      for (const [index, scenario] of SCENARIOS.entries()) {
        rows.push(...(await measureScenario(store, raw, rawIdOnly, scenario, index)));
      }
      const withRatio = withRatios(rows);
      const cpu1 = cpuCostUs(1);
      const cpu10 = cpuCostUs(10);
      const trips = await roundTrips(infra);

      const keelRows = withRatio.filter((r) => r.variant === 'keel');
      const worst = Math.max(...keelRows.map((r) => r.ratio ?? 0));
      const vsIdOnly = keelRows.map((r) => {
        const idOnly = withRatio.find((x) => x.scenario === r.scenario && x.variant === 'raw, _id only')!;
        return `${r.scenario}: ${(r.p50Ms / idOnly.p50Ms).toFixed(2)}x`;
      });
      return {
        name: 'append',
        title: 'Append: Keel vs raw insertOne',
        description: [
          `Each writer appends to its own stream with the exact expected version returned by its previous append. ` +
            `Events are ~0.5 KB conversation messages. Per scenario: ${ROUNDS} measured rounds (after 1 warm-up round), ` +
            `contenders interleaved with rotating order; latency is per append (one commit), throughput over all ` +
            `writers; client CPU = user + system CPU of the benchmark process per append (driver, BSON, Keel), not the server's.`,
          `raw = the driver's insertOne of a document of the same shape, key and size as Keel's commit document ` +
            `(checked against one Keel wrote), into a collection with the same indexes as Keel's commits collection on ` +
            `this server: _id${indexes.map((i) => `, ${i}`).join('')}. raw, _id only = the same without the other indexes.`,
        ],
        rows: withRatio,
        notes: [
          `Goal: Keel's append at most 1.5x a raw insert (p50). Measured: worst ${worst.toFixed(2)}x ` +
            `(${keelRows.map((r) => `${r.scenario}: ${r.ratio?.toFixed(2)}x`).join('; ')}): ${worst <= 1.5 ? 'met' : 'NOT met'}.`,
          `Against a raw insert with only the _id index: ${vsIdOnly.join('; ')}.`,
          `MongoDB commands per append (monitored client, 200 appends; count and mean time per append): ${trips}.`,
          `CPU per append outside the driver: prepareAppend (validate, JSON.stringify, UUIDv7 ids) ` +
            `${cpu1.prepareUs.toFixed(1)} µs for 1 event, ${cpu10.prepareUs.toFixed(1)} µs for 10; parsing the ` +
            `recorded events back for the result ≈ ${cpu1.reparseUs.toFixed(1)} µs / ${cpu10.reparseUs.toFixed(1)} µs.`,
        ],
      };
    } finally {
      await drop();
    }
  },
};
