/**
 * Rebuilding an aggregate from the log: `CommandHandler.load` of a 10,000-event stream without a
 * snapshot and with one a few events behind the head, against reading the same commit documents
 * with the raw driver (`find().toArray()` + JSON.parse).
 */
import type { Decider, EventData, RecordedEvent } from '@keel/core';
import { CommandHandler } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import { CommandMonitor, perOperation } from './lib/command-monitor.js';
import { describePlan } from './lib/explain.js';
import { messageEvents } from './lib/fixtures.js';
import type { BenchInfra } from './lib/infra.js';
import { freshStore } from './lib/infra.js';
import type { Contender } from './lib/interleave.js';
import { interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';

const TENANT = 'bench';
const EVENTS = 10_000;
const SNAPSHOT_BEHIND = 5;
const RUNS = 7;
const SNAPSHOT = { name: 'conversation-v1', every: 1_000 };

/** A conversation's state as an agent needs it: counters, status and the last few messages. */
interface Conversation {
  messages: number;
  inputTokens: number;
  lastRole: string | undefined;
  recent: Array<{ id: string; role: string; text: string }>;
}

interface MessageData {
  messageId: string;
  role: string;
  text: string;
  tokens: { input: number; output: number };
}

type ConversationEvent = EventData<'MessageAdded', MessageData>;

const RECENT = 10;

const conversation: Decider<Conversation, never, ConversationEvent> = {
  initialState: () => ({ messages: 0, inputTokens: 0, lastRole: undefined, recent: [] }),
  decide: () => [],
  evolve: (state, event) => ({
    messages: state.messages + 1,
    inputTokens: state.inputTokens + event.data.tokens.input,
    lastRole: event.data.role,
    recent: [
      ...state.recent.slice(-(RECENT - 1)),
      { id: event.data.messageId, role: event.data.role, text: event.data.text },
    ],
  }),
};

/** The fields of a commit document the raw baseline reads (see packages/core/src/mongodb/commit-document.ts). */
interface RawCommit {
  _id: string;
  t: string;
  s: string;
  f: number;
  v: number;
  e: Array<{ i: string; y: string; d: string; m: string }>;
}

interface RawSnapshot {
  _id: string;
  version: number;
  state: string;
}

/** Parses every event of the commits, as any reader of JSON-text payloads must. */
const parseAll = (docs: RawCommit[], fromVersion = 1): number => {
  let parsed = 0;
  for (const doc of docs) {
    doc.e.forEach((e, k) => {
      if (doc.f + k < fromVersion) return;
      JSON.parse(e.d);
      JSON.parse(e.m);
      parsed++;
    });
  }
  return parsed;
};

interface Layout {
  perCommit: number;
  stream: string;
}

async function fillStream(store: MongoEventStore, layout: Layout): Promise<void> {
  let version = 0;
  while (version < EVENTS) {
    const events = messageEvents(layout.stream, version + 1, layout.perCommit);
    version = (await store.append(TENANT, layout.stream, events, { expectedVersion: version }))
      .nextExpectedVersion;
  }
}

/** The last commit boundary at or before `version`: where CommandHandler takes its snapshots. */
const boundaryAtOrBefore = (version: number, perCommit: number): number => version - (version % perCommit);

async function measureLayout(
  infra: BenchInfra,
  store: MongoEventStore,
  layout: Layout,
): Promise<{ rows: Row[]; notes: string[] }> {
  await fillStream(store, layout);
  const snapshotVersion = boundaryAtOrBefore(EVENTS - SNAPSHOT_BEHIND, layout.perCommit);
  const behind = EVENTS - snapshotVersion;
  const head = await store.read(TENANT, layout.stream, { toVersion: snapshotVersion });
  const state = head.reduce(
    (s, e) => conversation.evolve(s, e as unknown as ConversationEvent),
    conversation.initialState(),
  );
  await store.snapshots.save(TENANT, layout.stream, { name: SNAPSHOT.name, version: snapshotVersion, state });

  // Loads run in another store instance, as in a process that did not write the stream.
  const reader = await MongoEventStore.connect(infra.mongoUrl, { dbName: store.db.databaseName });
  const plain = new CommandHandler(reader, conversation);
  const snapshotting = new CommandHandler(reader, conversation, { snapshot: SNAPSHOT });
  const commits = store.db.collection<RawCommit>('commits');
  const snapshots = store.db.collection<RawSnapshot>('snapshots');
  const snapshotId = JSON.stringify([TENANT, layout.stream, SNAPSHOT.name]);

  const once = (label: string, fn: () => Promise<void>): Contender => ({
    label,
    batch: async () => {
      const start = now();
      await fn();
      const ms = now() - start;
      return { latencies: [ms], wallMs: ms };
    },
  });
  const expectLoaded = (loaded: { version: number; eventsFolded: number }, folded: number): void => {
    if (loaded.version !== EVENTS || loaded.eventsFolded !== folded) {
      throw new Error(`load returned version ${loaded.version} after folding ${loaded.eventsFolded} events`);
    }
  };
  const contenders: Contender[] = [
    once('keel, no snapshot', async () => expectLoaded(await plain.load(TENANT, layout.stream), EVENTS)),
    once('raw, no snapshot', async () => {
      const docs = await commits.find({ t: TENANT, s: layout.stream }).sort({ f: 1 }).toArray();
      if (parseAll(docs) !== EVENTS) throw new Error('raw read missed events');
    }),
    once('keel, snapshot', async () => expectLoaded(await snapshotting.load(TENANT, layout.stream), behind)),
    once('raw, snapshot', async () => {
      const snapshot = await snapshots.findOne({ _id: snapshotId });
      if (!snapshot) throw new Error('snapshot missing');
      JSON.parse(snapshot.state);
      const docs = await commits
        .find({ t: TENANT, s: layout.stream, v: { $gt: snapshot.version } })
        .sort({ f: 1 })
        .toArray();
      if (parseAll(docs, snapshot.version + 1) !== behind) throw new Error('raw read missed events');
    }),
  ];
  let collected;
  try {
    collected = await interleave(contenders, { rounds: RUNS });
  } finally {
    await reader.close();
  }

  // Where the time goes: the commands of one load of each kind, on a monitored client.
  const monitor = new CommandMonitor(infra.mongoUrl);
  let commandsPlain: string;
  let commandsSnapshot: string;
  try {
    await monitor.client.connect();
    const monitored = new MongoEventStore(monitor.client.db(store.db.databaseName));
    await monitored.init(); // picks the read strategy, as MongoEventStore.connect does
    monitor.reset();
    await new CommandHandler(monitored, conversation).load(TENANT, layout.stream);
    commandsPlain = perOperation(monitor.snapshot(), 1);
    monitor.reset();
    await new CommandHandler(monitored, conversation, { snapshot: SNAPSHOT }).load(TENANT, layout.stream);
    commandsSnapshot = perOperation(monitor.snapshot(), 1);
  } finally {
    await monitor.client.close();
  }

  // A full rebuild split: the driver's read, the JSON parsing, the fold.
  const readOnly: number[] = [];
  const parseOnly: number[] = [];
  const foldOnly: number[] = [];
  const all = (await store.read(TENANT, layout.stream)) as unknown as Array<
    RecordedEvent & ConversationEvent
  >;
  for (let run = 0; run < 5; run++) {
    let start = now();
    const docs = await commits.find({ t: TENANT, s: layout.stream }).sort({ f: 1 }).toArray();
    readOnly.push(now() - start);
    start = now();
    parseAll(docs);
    parseOnly.push(now() - start);
    start = now();
    all.reduce((s, e) => conversation.evolve(s, e), conversation.initialState());
    foldOnly.push(now() - start);
  }

  // How this server answers the two kinds of stream reads: a range query and an `_id` point lookup.
  const rangePlan = describePlan(
    await commits
      .find({ t: TENANT, s: layout.stream, v: { $gte: snapshotVersion + 1 } })
      .sort({ f: 1 })
      .explain(),
  );
  const someId = (await commits.findOne({ t: TENANT, s: layout.stream, f: snapshotVersion + 1 }))?._id ?? '';
  const idPlan = describePlan(await commits.find({ _id: someId }).explain());
  const lookups: number[] = [];
  for (let k = 0; k < 7; k++) {
    const start = now();
    await commits.findOne({ _id: someId });
    lookups.push(now() - start);
  }
  const documents = await commits.countDocuments();

  const scenario = (withSnapshot: boolean): string =>
    `${EVENTS.toLocaleString('en')} events, ${layout.perCommit}/commit, ${withSnapshot ? `snapshot at ${snapshotVersion.toLocaleString('en')}` : 'no snapshot'}`;
  const rows = contenders.map(({ label }): Row => {
    const { latencies } = collected.get(label)!;
    const s = summarize(latencies);
    const withSnapshot = label.endsWith('snapshot') && !label.endsWith('no snapshot');
    return {
      scenario: scenario(withSnapshot),
      variant: label.startsWith('keel') ? 'keel' : 'raw',
      n: s.n,
      p50Ms: s.p50,
      p99Ms: s.p99,
      opsPerSec: 1000 / s.mean,
      eventsPerSec: ((withSnapshot ? behind : EVENTS) * 1000) / s.mean,
    };
  });
  return {
    rows,
    notes: [
      `${layout.perCommit}/commit (${documents} commit documents): MongoDB commands of one load without a snapshot: ` +
        `${commandsPlain}; with the snapshot: ${commandsSnapshot}.`,
      `${layout.perCommit}/commit: a range query on the stream (${rangePlan}); an _id point lookup ` +
        `(${idPlan}) takes ${median(lookups).toFixed(1)} ms here.`,
      `${layout.perCommit}/commit, full read split (medians of 5, raw driver): find().toArray() of ` +
        `${documents} documents ${median(readOnly).toFixed(1)} ms, JSON.parse of ${EVENTS * 2} payload/metadata ` +
        `strings ${median(parseOnly).toFixed(1)} ms, fold of ${EVENTS} events in memory ${median(foldOnly).toFixed(1)} ms.`,
    ],
  };
}

export const rebuildBench: Bench = {
  name: 'rebuild',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const rows: Row[] = [];
    const notes: string[] = [];
    // Each layout in its own database, so each read sees only its own stream's commits.
    for (const perCommit of [1, 10]) {
      const { store, drop } = await freshStore(infra, 'bench_rebuild');
      try {
        const measured = await measureLayout(infra, store, { perCommit, stream: `conv-rebuild${perCommit}` });
        rows.push(...measured.rows);
        notes.push(...measured.notes);
      } finally {
        await drop();
      }
    }
    const withRatio = withRatios(rows);
    const snapshotRows = withRatio.filter((r) => r.variant === 'keel' && r.scenario.includes('snapshot at'));
    const worst = Math.max(...snapshotRows.map((r) => r.p50Ms));
    return {
      name: 'rebuild',
      title: 'Rebuild: CommandHandler.load vs raw find + JSON.parse',
      description: [
        `A ${EVENTS.toLocaleString('en')}-event conversation stream (~0.5 KB events), stored 1 event per commit and ` +
          `10 events per commit. keel = CommandHandler.load in a store instance that did not write the stream ` +
          `(snapshot if any, read newer events, fold into a state holding counters and the last ${RECENT} messages); ` +
          `the snapshot is ${SNAPSHOT_BEHIND} events behind the head, at a commit boundary as CommandHandler takes ` +
          `them (${SNAPSHOT_BEHIND} behind with 1/commit, the commit before the last with 10/commit). raw = the driver's find({t, s}).sort({f: 1}).toArray() ` +
          `of the same commit documents + JSON.parse of every event (no fold); with a snapshot, raw = findOne of the ` +
          `snapshot document + find of the newer commits + JSON.parse.`,
        `Each layout is alone in a fresh database. Median of ${RUNS} runs per row after 1 warm-up, contenders ` +
          `interleaved; n = runs, p99 = the slowest run; ` +
          `ops/s = loads per second, events/s = events folded per second.`,
      ],
      rows: withRatio,
      notes: [
        `Goal: a load with a snapshot under 20 ms. Measured p50 ${snapshotRows
          .map((r) => `${r.p50Ms.toFixed(2)} ms (${r.scenario})`)
          .join(', ')}: ${worst < 20 ? 'met' : 'NOT met'}.`,
        ...notes,
      ],
    };
  },
};
