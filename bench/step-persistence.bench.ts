/**
 * Per-step persistence of a turn: a scripted 20-step turn (19 model steps with one tool call and
 * its result, then the final answer) through ConversationService on the MongoEventStore, no LLM
 * and no tools service. Per step: the time of its commands and of their appends, and the bytes
 * they wrote (BSON size of the commit documents, read back, plus the snapshot when one is taken);
 * against a raw insertOne of one document of the same total size.
 */
import { randomUUID } from 'node:crypto';
import { BSON } from 'mongodb';
import type { Document } from 'mongodb';
import type { EventStore } from '@keel/core';
import { InMemoryEventBus, uuidv7 } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import type { AgentDefinition, ToolDefinition } from '@keel/events';
import type { CallContext } from '../services/agent/src/call-context.js';
import { ConversationService } from '../services/agent/src/conversation/conversation.service.js';
import { TenantConfigService } from '../services/agent/src/tenant-config/tenant-config.service.js';
import type { CommandStats } from './lib/command-monitor.js';
import { CommandMonitor, perOperation } from './lib/command-monitor.js';
import type { BenchInfra } from './lib/infra.js';
import { freshStore } from './lib/infra.js';
import type { Batch } from './lib/interleave.js';
import { interleave } from './lib/interleave.js';
import type { ObservedAppend } from './lib/observed-store.js';
import { ObservedStore } from './lib/observed-store.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';

const TENANT = 'bench';
const AGENT_ID = 'orders';
const STEPS = 20;
const ROUNDS = 25;
export const QUESTION =
  'Please check my last orders one by one and tell me which of them have shipped, with the carrier and ETA.';

export const LOOKUP: ToolDefinition = {
  name: 'lookup_order',
  description: 'Looks an order up by id: status, items, shipping and totals.',
  inputSchema: {
    type: 'object',
    properties: { orderId: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } },
    required: ['orderId'],
  },
  kind: 'webhook',
  url: 'https://tools.example.com/orders/lookup',
  approval: 'never',
  roles: [],
  phases: [],
  timeoutMs: 10_000,
};

const AGENT: AgentDefinition = {
  agentId: AGENT_ID,
  model: 'openai:gpt-4o-mini',
  instructions: 'You help customers with their orders. Look orders up before answering.',
  tools: ['lookup_order'],
  maxSteps: STEPS,
  temperature: 0,
  toolResultMaxChars: 4_000,
};

/** A webhook's answer of a typical size (about 600 bytes of JSON). */
export const orderResult = (k: number) => ({
  orderId: `A-${1000 + k}`,
  status: k % 3 === 0 ? 'shipped' : 'processing',
  items: [
    { sku: 'ADP-USBC-65W', name: 'USB-C power adapter 65 W', qty: 3, unitPrice: 19.99 },
    { sku: 'CBL-USBC-2M', name: 'Braided USB-C cable, 2 m', qty: 2, unitPrice: 9.5 },
  ],
  shipping: {
    method: 'express',
    carrier: k % 3 === 0 ? 'DHL' : null,
    eta: '2026-11-24',
    address: { street: 'Hauptstrasse 12', city: 'Berlin', postcode: '10115', country: 'DE' },
  },
  totals: { net: 78.97, vat: 15.0, gross: 93.97, currency: 'EUR' },
  updatedAt: '2026-11-21T09:14:03.000Z',
});

export const FINAL_ANSWER =
  'Here is where your orders stand. Orders A-1003, A-1006, A-1009, A-1012, A-1015 and A-1018 have shipped ' +
  'with DHL express and should arrive on 24 November; the others are still being processed and have no ' +
  'carrier yet. Each holds three USB-C power adapters and two braided cables, 93.97 EUR including VAT. ' +
  'I can change a delivery address for the orders that have not shipped, if you want.';

const context = (): CallContext => ({
  tenantId: TENANT,
  keyId: 'key_bench',
  role: 'editor',
  userId: 'user-42',
  correlationId: randomUUID(),
});

/** What one step of one turn cost. */
interface StepRecord {
  /** Its commands through ConversationService (load, decide, append, snapshot when due). */
  commandMs: number;
  /** The appends alone. */
  appendMs: number;
  /** BSON bytes of the commit documents it wrote (read back) plus the snapshot, when it took one. */
  bytes: number;
  commits: number[];
  /** The commit documents it wrote, as read back. */
  documents: Document[];
  /** JSON of its events' data and metadata, as stored (the rest of `commits` is the documents' framing). */
  payloadBytes: number;
  snapshotBytes: number;
}

/** A conversation service on an observed store, and the appends it made since `appends` was emptied. */
interface Setup {
  conversations: ConversationService;
  appends: ObservedAppend[];
  store: MongoEventStore;
  /** Called before and after each step (the command monitor's window). */
  onStep?: (step: number, phase: 'start' | 'end') => void;
}

async function setUp(store: MongoEventStore): Promise<Setup> {
  const appends: ObservedAppend[] = [];
  const observed: EventStore = new ObservedStore(store, (a) => appends.push(a));
  const config = new TenantConfigService(observed);
  // The bus only carries cancel signals here; nothing is published (no relay).
  const bus = new InMemoryEventBus();
  const conversations = new ConversationService(observed, bus, config);
  if (!(await config.load(TENANT)).agents[AGENT_ID]) {
    const at = new Date().toISOString();
    await config.apply({ ...context(), role: 'admin' }, { type: 'PutTool', tool: LOOKUP, at });
    await config.apply({ ...context(), role: 'admin' }, { type: 'PutAgent', agent: AGENT, at });
  }
  return { conversations, appends, store };
}

/** One scripted turn in a new conversation; per step, what it cost. */
async function scriptedTurn(setup: Setup): Promise<StepRecord[]> {
  const { conversations, appends, store } = setup;
  const ctx = context();
  const { id } = await conversations.create(ctx, { agentId: AGENT_ID });
  const { turnId } = await conversations.send(ctx, id, { content: QUESTION });
  const stream = conversations.stream(id);
  const steps: Array<{ commandMs: number; appends: ObservedAppend[] }> = [];
  for (let step = 1; step <= STEPS; step++) {
    appends.length = 0;
    const last = step === STEPS;
    const toolCallId = uuidv7();
    setup.onStep?.(step, 'start');
    const start = now();
    await conversations.run(ctx, id, {
      type: 'RecordModelOutput',
      turnId,
      step,
      messageId: uuidv7(),
      text: last ? FINAL_ANSWER : `Looking up order A-${1000 + step} (${step} of ${STEPS - 1}).`,
      toolCalls: last
        ? []
        : [
            {
              toolCallId,
              name: LOOKUP.name,
              args: { orderId: `A-${1000 + step}`, fields: ['status', 'items', 'shipping', 'totals'] },
              verdict: { kind: 'allow', approval: 'never' },
            },
          ],
      usage: {
        model: 'gpt-4o-mini-2024-07-18',
        promptTokens: 900 + 420 * step,
        completionTokens: last ? 110 : 38,
        cacheReadTokens: step > 1 ? 768 : 0,
        cacheWriteTokens: 0,
        costUsd: null,
      },
      approvalIds: {},
      at: new Date().toISOString(),
    });
    if (!last) {
      await conversations.recordToolResult(ctx, id, { toolCallId, ok: true, result: orderResult(step) });
    }
    const commandMs = now() - start;
    setup.onStep?.(step, 'end');
    steps.push({ commandMs, appends: [...appends] });
  }
  const turnOver = steps.at(-1)!.appends.some((a) => a.events.some((e) => e.type === 'TurnCompleted'));
  if (!turnOver) throw new Error(`the scripted turn of ${stream} did not complete`);

  // What was written, read back: the commits by their first version, and the snapshot.
  const docs = await store.db.collection('commits').find({ t: TENANT, s: stream }).toArray();
  const byFrom = new Map(docs.map((d) => [d.f as number, d]));
  const snapshots = await store.db.collection('snapshots').find({ t: TENANT, s: stream }).toArray();
  return steps.map(({ commandMs, appends: made }) => {
    const written = made.map((a) => byFrom.get(a.result.fromVersion)!);
    const commits = written.map((d) => BSON.calculateObjectSize(d));
    const versions = new Set(made.map((a) => a.result.nextExpectedVersion));
    const snapshotBytes = snapshots
      .filter((s) => versions.has(s.version as number))
      .reduce((sum, s) => sum + BSON.calculateObjectSize(s), 0);
    const payloadBytes = written
      .flatMap((d) => (d.e as Array<{ d: string; m: string }>).map((e) => e.d.length + e.m.length))
      .reduce((a, b) => a + b, 0);
    return {
      commandMs,
      appendMs: made.reduce((sum, a) => sum + a.committedAt - a.startedAt, 0),
      bytes: commits.reduce((a, b) => a + b, 0) + snapshotBytes,
      commits,
      documents: written,
      payloadBytes,
      snapshotBytes,
    };
  });
}

/** A document of a raw baseline: string keys, like Keel's commits. */
type RawDocument = Document & { _id: string };

/** A raw document of exactly `bytes` BSON bytes, shaped like a commit (unique `t`, `c`). */
const rawDocument = (bytes: number): RawDocument => {
  const c = randomUUID();
  const doc = { _id: `${TENANT}|${c}`, t: TENANT, c, body: '' };
  return { ...doc, body: 'x'.repeat(Math.max(0, bytes - BSON.calculateObjectSize(doc))) };
};

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

export const stepPersistenceBench: Bench = {
  name: 'step-persistence',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const { store, drop } = await freshStore(infra, 'bench_steps');
    try {
      const setup = await setUp(store);
      // A first turn gives each step's size for the raw documents (ids and times have fixed widths),
      // and the commit documents themselves for the second baseline.
      const primer = await scriptedTurn(setup);
      const sizes = primer.map((s) => s.bytes);
      const rawSteps = store.db.collection<RawDocument>('raw_steps');
      const rawCommits = store.db.collection<RawDocument>('raw_commits');
      for (const collection of [rawSteps, rawCommits]) {
        await collection.createIndex({ t: 1, c: 1 }, { name: 'commit_id', unique: true });
      }

      const records: StepRecord[][] = [];
      const collected = await interleave(
        [
          {
            label: 'keel',
            batch: async (): Promise<Batch> => {
              const start = now();
              const steps = await scriptedTurn(setup);
              records.push(steps);
              return { latencies: steps.map((s) => s.commandMs), wallMs: now() - start };
            },
          },
          {
            label: 'raw',
            batch: async (): Promise<Batch> => {
              const latencies: number[] = [];
              const start = now();
              for (const bytes of sizes) {
                const doc = rawDocument(bytes);
                const t = now();
                await rawSteps.insertOne(doc);
                latencies.push(now() - t);
              }
              return { latencies, wallMs: now() - start };
            },
          },
          {
            label: 'raw, same documents',
            batch: async (): Promise<Batch> => {
              const latencies: number[] = [];
              const start = now();
              for (const step of primer) {
                const copies = step.documents.map((d) => {
                  const c = randomUUID();
                  return { ...d, _id: `${TENANT}|${c}`, c };
                });
                let ms = 0;
                for (const copy of copies) {
                  // Untimed, as Keel's appends follow the load's reads: on FerretDB an insert right
                  // after a query of the same collection takes longer than one after an insert.
                  await rawCommits.findOne({ _id: copy._id });
                  const t = now();
                  await rawCommits.insertOne(copy);
                  ms += now() - t;
                }
                latencies.push(ms);
              }
              return { latencies, wallMs: now() - start };
            },
          },
        ],
        { rounds: ROUNDS },
      );
      const turns = records.slice(1);
      const rawTurns = chunk(collected.get('raw')!.latencies, STEPS);
      const stepOf = (k: number) => turns.map((t) => t[k]!);
      const row = (scenario: string, variant: string, values: number[], bytes: number): Row => {
        const s = summarize(values);
        return { scenario, variant, n: s.n, p50Ms: s.p50, p99Ms: s.p99, bytesPerOp: bytes };
      };
      const rows: Row[] = [];
      for (let k = 0; k < STEPS; k++) {
        const steps = stepOf(k);
        const bytes = median(steps.map((s) => s.bytes));
        const scenario = `step ${k + 1}${k === STEPS - 1 ? ' (final answer)' : ''}`;
        rows.push(
          row(
            scenario,
            'keel',
            steps.map((s) => s.commandMs),
            bytes,
          ),
        );
        rows.push(
          row(
            scenario,
            'keel, appends only',
            steps.map((s) => s.appendMs),
            bytes,
          ),
        );
        rows.push(
          row(
            scenario,
            'raw',
            rawTurns.map((t) => t[k]!),
            sizes[k]!,
          ),
        );
      }
      const all = turns.flat();
      const allBytes = median(all.map((s) => s.bytes));
      rows.push(
        row(
          'all steps, per step',
          'keel',
          all.map((s) => s.commandMs),
          allBytes,
        ),
      );
      rows.push(
        row(
          'all steps, per step',
          'keel, appends only',
          all.map((s) => s.appendMs),
          allBytes,
        ),
      );
      rows.push(row('all steps, per step', 'raw', rawTurns.flat(), median(sizes)));
      const sameDocTurns = chunk(collected.get('raw, same documents')!.latencies, STEPS);
      const commitBytes = primer.map((s) => sum(s.commits));
      rows.push(row('all steps, per step', 'raw, same documents', sameDocTurns.flat(), median(commitBytes)));
      const turnBytes = median(turns.map((t) => sum(t.map((s) => s.bytes))));
      rows.push(
        row(
          `whole turn (${STEPS} steps)`,
          'keel',
          turns.map((t) => sum(t.map((s) => s.commandMs))),
          turnBytes,
        ),
      );
      rows.push(
        row(
          `whole turn (${STEPS} steps)`,
          'keel, appends only',
          turns.map((t) => sum(t.map((s) => s.appendMs))),
          turnBytes,
        ),
      );
      rows.push(row(`whole turn (${STEPS} steps)`, 'raw', rawTurns.map(sum), sum(sizes)));
      rows.push(
        row(`whole turn (${STEPS} steps)`, 'raw, same documents', sameDocTurns.map(sum), sum(commitBytes)),
      );

      // The MongoDB commands of each step, on a client that records them (one more turn).
      const monitor = new CommandMonitor(infra.mongoUrl);
      await monitor.client.connect();
      const perStep = new Map<number, Map<string, CommandStats>>();
      try {
        const monitoredStore = new MongoEventStore(monitor.client.db(store.db.databaseName));
        await monitoredStore.init();
        const monitored = await setUp(monitoredStore);
        monitored.onStep = (step, phase) => {
          if (phase === 'start') monitor.reset();
          else perStep.set(step, monitor.snapshot());
        };
        await scriptedTurn(monitored);
      } finally {
        await monitor.client.close();
      }
      const commitsAtEnd = await store.db.collection('commits').countDocuments();

      const first = turns[0]!;
      const toolStep = first[1]!;
      const snapshotStep = first.findIndex((s) => s.snapshotBytes > 0);
      const bytesVary = all.some((s, i) => s.bytes !== sizes[i % STEPS]);
      const p50Of = (scenario: string, variant: string) =>
        rows.find((r) => r.scenario === scenario && r.variant === variant)?.p50Ms ?? Number.NaN;
      const withRatio = withRatios(rows);
      return {
        name: 'step-persistence',
        title: `Per-step persistence of a ${STEPS}-step turn vs raw insertOne`,
        description: [
          `A scripted turn through ConversationService on the MongoEventStore (${infra.mongoBackend}), no LLM, no tools service, ` +
            `no relay: a new conversation, a user message, then ${STEPS - 1} steps of RecordModelOutput with one ` +
            `tool call (AssistantMessageCompleted, UsageRecorded, ToolCallRequested) followed by recordToolResult ` +
            `with a ~600-byte JSON result (ToolCallCompleted), and a last step with the final answer ` +
            `(AssistantMessageCompleted, UsageRecorded, TurnCompleted). Conversation snapshots every 512 events ` +
            `(conversation.service.ts).`,
          `keel = the step's commands (each: load snapshot + newer events, decide, append with the expected ` +
            `version, snapshot when due); keel, appends only = the step's MongoEventStore.append calls alone. ` +
            `bytes/op = BSON size of the commit documents the step wrote (read back from commits) plus the snapshot ` +
            `document when the step took one. raw = one insertOne of a document of the same total size (into a ` +
            `collection with the same indexes as commits on this server: _id and a unique (t, c)); raw, same ` +
            `documents = insertOne of each of the step's commit documents as Keel wrote them (new keys), into such a ` +
            `collection, each after an untimed findOne by _id there (Keel's appends follow the load's reads): the ` +
            `appends' writes without Keel (shown for the totals). ` +
            `${ROUNDS} turns per contender after a warm-up turn, interleaved; n = turns.`,
        ],
        rows: withRatio,
        notes: [
          `Bytes: a tool step writes ${toolStep.commits.length} commits, ${toolStep.commits.join(' + ')} = ` +
            `${sum(toolStep.commits)} B, of which ${toolStep.payloadBytes} B are the events' JSON (data and metadata ` +
            `strings) and ${sum(toolStep.commits) - toolStep.payloadBytes} B the documents' framing (keys, ids, ` +
            `versions, event types, timestamps); the final step writes ${first[STEPS - 1]!.bytes} B. The whole turn ` +
            `writes ${turnBytes} B in ${sum(first.map((s) => s.commits.length))} commits` +
            (snapshotStep >= 0
              ? `, including one ${first[snapshotStep]!.snapshotBytes} B conversation snapshot written in step ` +
                `${snapshotStep + 1} (the 20th event since the last snapshot)`
              : '') +
            `. Sizes were the same in every turn: ${bytesVary ? 'no (medians shown)' : 'yes'}. Not counted: the ` +
            `conversation's creation and the user's message before step 1, and what the outbox relay writes later ` +
            `per commit (a log page entry and the position marker).`,
          `A step's time is mostly loading the conversation (each of its two commands reads the snapshot, then ` +
            `the newer commits one by one by _id, up to 16, then one range query), so it grows with the events ` +
            `since the last snapshot: keel p50 step 1 ${p50Of('step 1', 'keel').toFixed(1)} ms, step ${snapshotStep} ` +
            `${p50Of(`step ${snapshotStep}`, 'keel').toFixed(1)} ms, step ${snapshotStep + 2} (after the snapshot) ` +
            `${p50Of(`step ${snapshotStep + 2}`, 'keel').toFixed(1)} ms, step ${STEPS - 1} ` +
            `${p50Of(`step ${STEPS - 1}`, 'keel').toFixed(1)} ms. The appends stay flat: p50 ` +
            `${p50Of('all steps, per step', 'keel, appends only').toFixed(2)} ms per step (two appends), against ` +
            `${p50Of('all steps, per step', 'raw, same documents').toFixed(2)} ms for raw inserts of the same ` +
            `documents (${(
              p50Of('all steps, per step', 'keel, appends only') /
              p50Of('all steps, per step', 'raw, same documents')
            ).toFixed(
              2,
            )}x) and ${p50Of('all steps, per step', 'raw').toFixed(2)} ms for one insert of the same ` +
            `total size. Alone (the append section) an append is within 1.15x of a raw insert; here each append ` +
            `comes right after its command's load (4 to 18 queries each, all scans on FerretDB) while each raw insert ` +
            `follows one query: the likely cause of the difference.`,
          `FerretDB 1.24 (${infra.mongoBackend}) answers every query but an insert with a scan of the collection (see the rebuild ` +
            `section: even an _id lookup scans), so each of those reads costs time that grows with the commits ` +
            `collection (${commitsAtEnd} documents at the end); on MongoDB they are index lookups. The appends are ` +
            `inserts and do not scan.`,
          `MongoDB commands of one step (one more turn on a monitored client; count and driver-side time): ` +
            [1, 2, 10, STEPS - 1, STEPS]
              .map((step) => `step ${step}: ${perOperation(perStep.get(step) ?? new Map(), 1)}`)
              .join('; ') +
            '.',
        ],
      };
    } finally {
      await drop();
    }
  },
};

const chunk = <T>(values: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(values.length / size) }, (_, i) => values.slice(i * size, (i + 1) * size));
