/**
 * What sealing conversations costs on the hot path: Keel's store with every conversation's content
 * sealed under its own data key (`sealingStore`: AES-256-GCM per event, the key kept sealed in
 * `data_keys`, remembered per process) against the same `MongoEventStore` without it, on the same
 * database, interleaved. Appends of one event to a conversation already holding its key, the
 * first append of a new conversation (its key made and stored), and reads of a 20-event stream.
 */
import { randomBytes } from 'node:crypto';
import type { EventData, EventStore } from '@keel/core';
import { DataKeyring, EventSealer, sealingStore, uuidv7 } from '@keel/core';
import { MongoDataKeyStore } from '@keel/core/mongodb';
import { messageEvents } from './lib/fixtures.js';
import type { BenchInfra } from './lib/infra.js';
import { freshStore } from './lib/infra.js';
import type { Contender } from './lib/interleave.js';
import { concurrentWriters, interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';

const TENANT = 'bench';
const ROUNDS = 12;
const OPS_PER_BATCH = 60;
const READ_LENGTH = 20;

/** Messages of a conversation stream, so the sealer seals them (ids, numbers stay clear). */
const conversationEvents = (stream: string, seq: number, count: number): EventData[] =>
  messageEvents(stream, seq, count);

type Scenario = 'append 1 event (key held)' | 'first append (key made)' | `read ${number} events`;

/** One contender per store: appends continue its own streams, reads use streams it wrote. */
const contender = (
  label: string,
  store: EventStore,
  scenario: Scenario,
  readStreams: string[],
): Contender => {
  const stream = `conversation-${uuidv7()}`;
  let version = 0;
  return {
    label,
    batch: () =>
      concurrentWriters(1, OPS_PER_BATCH, async (_w, k) => {
        if (scenario === 'append 1 event (key held)') {
          const result = await store.append(TENANT, stream, conversationEvents(stream, version + 1, 1), {
            expectedVersion: version,
          });
          version = result.nextExpectedVersion;
        } else if (scenario === 'first append (key made)') {
          const fresh = `conversation-${uuidv7()}`;
          await store.append(TENANT, fresh, conversationEvents(fresh, 1, 1), { expectedVersion: 0 });
        } else {
          const events = await store.read(TENANT, readStreams[k % readStreams.length]!);
          if (events.length !== READ_LENGTH) throw new Error(`read ${events.length} events`);
        }
      }),
  };
};

/** Microseconds of CPU to seal and open one ~0.5 KB message event (in memory, key held). */
async function cryptoCostUs(
  sealer: EventSealer,
  store: EventStore,
): Promise<{ sealUs: number; openUs: number }> {
  const stream = `conversation-${uuidv7()}`;
  const [recorded] = (await store.append(TENANT, stream, conversationEvents(stream, 1, 1))).events;
  const event = conversationEvents(stream, 1, 1)[0]!;
  const iterations = 2_000;
  const seals: number[] = [];
  const opens: number[] = [];
  const sealed = { ...recorded!, data: (await sealer.seal(TENANT, stream, [event]))[0]!.data };
  for (let run = 0; run < 5; run++) {
    let start = now();
    for (let k = 0; k < iterations; k++) await sealer.seal(TENANT, stream, [event]);
    seals.push(((now() - start) / iterations) * 1000);
    start = now();
    for (let k = 0; k < iterations; k++) await sealer.open(sealed);
    opens.push(((now() - start) / iterations) * 1000);
  }
  return { sealUs: median(seals), openUs: median(opens) };
}

const rowOf = (
  scenario: string,
  variant: string,
  latencies: number[],
  wallMs: number,
  cpuMs: number,
): Row => {
  const s = summarize(latencies);
  return {
    scenario,
    variant,
    n: s.n,
    p50Ms: s.p50,
    p99Ms: s.p99,
    opsPerSec: (latencies.length / wallMs) * 1000,
    cpuUsPerOp: (cpuMs / latencies.length) * 1000,
  };
};

export const sealingBench: Bench = {
  name: 'sealing',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const { store, drop } = await freshStore(infra, 'bench_sealing');
    try {
      const sealer = new EventSealer({
        keyring: new DataKeyring(new MongoDataKeyStore(store.db), randomBytes(32)),
        keyStream: ({ streamName }) => (streamName.startsWith('conversation-') ? streamName : undefined),
        erasureType: 'ConversationDeleted',
      });
      const sealed = sealingStore(store, sealer);
      const readStreams = { raw: [] as string[], sealed: [] as string[] };
      for (const [name, target] of [
        ['raw', store],
        ['sealed', sealed],
      ] as const) {
        for (let k = 0; k < 10; k++) {
          const stream = `conversation-${uuidv7()}`;
          await target.append(TENANT, stream, conversationEvents(stream, 1, READ_LENGTH));
          readStreams[name].push(stream);
        }
      }
      const rows: Row[] = [];
      const scenarios: Scenario[] = [
        'append 1 event (key held)',
        'first append (key made)',
        `read ${READ_LENGTH} events`,
      ];
      for (const scenario of scenarios) {
        const contenders = [
          contender('keel (sealed)', sealed, scenario, readStreams.sealed),
          contender('raw', store, scenario, readStreams.raw),
        ];
        const collected = await interleave(contenders, { rounds: ROUNDS });
        for (const { label } of contenders) {
          const { latencies, wallMs, cpuMs } = collected.get(label)!;
          rows.push(rowOf(scenario, label, latencies, wallMs, cpuMs));
        }
      }
      const withRatio = withRatios(rows);
      const crypto = await cryptoCostUs(sealer, store);
      const ratios = withRatio.filter((r) => r.ratio !== undefined);
      return {
        name: 'sealing',
        title: 'Conversation sealing: sealed store vs the same store unsealed',
        description: [
          `keel (sealed) = MongoEventStore under sealingStore: each conversation event's content (all but ids, times, ` +
            `numbers and enum-like fields) sealed with AES-256-GCM under the conversation's data key at append, opened at read; ` +
            `keys kept sealed with the master key in data_keys and remembered per process. raw = the same MongoEventStore ` +
            `without sealing, same database, interleaved (${ROUNDS} rounds of ${OPS_PER_BATCH} ops after 1 warm-up round). ` +
            `Events are ~0.5 KB messages; reads are whole ${READ_LENGTH}-event streams.`,
        ],
        rows: withRatio,
        notes: [
          `p50 ratios: ${ratios.map((r) => `${r.scenario} ${r.ratio!.toFixed(2)}x`).join('; ')}.`,
          `CPU per event, in memory with the key held: seal ${crypto.sealUs.toFixed(1)} µs, open ${crypto.openUs.toFixed(1)} µs.`,
          `A new conversation's first append also inserts its data key into data_keys (one more insert).`,
        ],
      };
    } finally {
      await drop();
    }
  },
};
