/**
 * "What came after this event": the read the tools service makes for every tool call it runs
 * (the events after the request: its turn cancelled, its result recorded), by a process that holds
 * the request's event but has not read the conversation. Keel with the event's commit as the
 * hint (`ReadStreamOptions.fromCommit`, what the tools pass) and without it (what they did before),
 * against the least any reader must ask: one `_id` lookup of the commit after the held one.
 */
import type { RecordedEvent } from '@keel/core';
import { commitKey, MongoEventStore } from '@keel/core/mongodb';
import { messageEvents } from './lib/fixtures.js';
import type { BenchInfra } from './lib/infra.js';
import { backendWord, freshStore } from './lib/infra.js';
import type { Contender } from './lib/interleave.js';
import { concurrentWriters, interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { now, summarize } from './lib/stats.js';

const TENANT = 'bench';
/** Commits per conversation measured: a short one, a working session, a long agent run. */
const LENGTHS = [6, 50, 200];
/** Conversations of each length: each contender reads each one once, as a first touch. */
const CONVERSATIONS = 12;
/** Other conversations of the tenant (6 commits each), as a tenant's log holds. */
const OTHERS = 300;
/** Events per commit (a model step: its message and a tool call request). */
const PER_COMMIT = 2;

/** Appends `commits` commits to a conversation; the held event is the last one. */
async function fill(store: MongoEventStore, stream: string, commits: number): Promise<RecordedEvent> {
  let version = 0;
  let last: RecordedEvent | undefined;
  for (let c = 0; c < commits; c++) {
    const result = await store.append(TENANT, stream, messageEvents(stream, version + 1, PER_COMMIT), {
      expectedVersion: version,
    });
    version = result.nextExpectedVersion;
    last = result.events.at(-1);
  }
  return last!;
}

/** One read per batch, each of another conversation (a first touch for that reader). */
const reading = (label: string, held: RecordedEvent[], read: (event: RecordedEvent) => Promise<unknown>) => {
  let next = 0;
  const contender: Contender = {
    label,
    batch: async () => {
      const event = held[next++ % held.length]!;
      const start = now();
      await read(event);
      const ms = now() - start;
      return { latencies: [ms], wallMs: ms };
    },
  };
  return contender;
};

async function measureLength(store: MongoEventStore, infra: BenchInfra, commits: number): Promise<Row[]> {
  const held: RecordedEvent[] = [];
  for (let i = 0; i < CONVERSATIONS; i++) held.push(await fill(store, `conv-${commits}-${i}`, commits));
  // Two readers that never wrote: each contender's reads are first touches of their conversations.
  const hinted = await MongoEventStore.connect(infra.mongoUrl, { dbName: store.db.databaseName });
  const plain = await MongoEventStore.connect(infra.mongoUrl, { dbName: store.db.databaseName });
  const commitsCollection = store.db.collection<{ _id: string }>('commits');
  const after = (e: RecordedEvent) => ({ fromVersion: e.version + 1 });
  const contenders = [
    reading('keel, hint', held, (e) =>
      hinted.read(e.tenantId, e.streamName, { ...after(e), fromCommit: e.commitId }),
    ),
    reading('keel, no hint', held, (e) => plain.read(e.tenantId, e.streamName, after(e))),
    reading('raw', held, (e) =>
      commitsCollection.findOne({ _id: commitKey(e.tenantId, e.streamName, e.version + 1) }),
    ),
  ];
  try {
    const collected = await interleave(contenders, { rounds: CONVERSATIONS - 1 });
    return contenders.map(({ label }): Row => {
      const s = summarize(collected.get(label)!.latencies);
      return {
        scenario: `${commits} commits, read after the last event`,
        variant: label === 'raw' ? 'raw' : label,
        n: s.n,
        p50Ms: s.p50,
        p99Ms: s.p99,
        opsPerSec: 1000 / s.mean,
      };
    });
  } finally {
    await Promise.all([hinted.close(), plain.close()]);
  }
}

export const tailReadBench: Bench = {
  name: 'tail-read',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const { store, drop } = await freshStore(infra, 'bench_tail');
    const rows: Row[] = [];
    try {
      await concurrentWriters(20, OTHERS / 20, (w, k) =>
        fill(store, `other-${w}-${k}`, 6).then(() => undefined),
      );
      for (const commits of LENGTHS) rows.push(...(await measureLength(store, infra, commits)));
    } finally {
      await drop();
    }
    const withRatio = withRatios(rows);
    const p50 = (variant: string, commits: number) =>
      withRatio.find((r) => r.variant === variant && r.scenario.startsWith(`${commits} `))!.p50Ms.toFixed(2);
    return {
      name: 'tail-read',
      title: 'Reading what came after a held event: with its commit as the hint, without, raw',
      description: [
        `A tenant's log of ${OTHERS} conversations of 6 commits, and ${CONVERSATIONS} conversations each of ` +
          `${LENGTHS.join(', ')} commits (${PER_COMMIT} events each, ~0.5 KB); the held event is the last of its ` +
          `conversation, as a tool call's request is when the tools service takes it. keel = \`read\` from the ` +
          `version after it, by a store instance that has not read that conversation, with \`fromCommit\` (the ` +
          `tools service since this change) and without (before it); raw = the driver's one \`_id\` lookup of the ` +
          `commit after the held one (the least a reader must ask).`,
        `Store: ${backendWord(infra)} (a fresh database, never analyzed). Each read is of another conversation, ` +
          `contenders interleaved; n = reads (after 1 warm-up).`,
      ],
      rows: withRatio,
      notes: [
        `p50 with the hint / without / raw: ${LENGTHS.map(
          (c) => `${c} commits ${p50('keel, hint', c)} / ${p50('keel, no hint', c)} / ${p50('raw', c)} ms`,
        ).join('; ')}.`,
      ],
    };
  },
};
