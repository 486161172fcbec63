/**
 * The peer, side by side: the same scripted N-step tool-calling turn persisted by Keel (the
 * conversation's events through ConversationService on the MongoEventStore) and by LangGraph
 * (`createReactAgent` with a scripted chat model and `@langchain/langgraph-checkpoint-mongodb`'s
 * MongoDBSaver, in its default full-state checkpoints and with the `MessagesDeltaValue` channel),
 * on the same server in the same run, at 10, 20, 40 and 80 steps. Bytes are counted as written:
 * every insert, update and findAndModify the driver sends (command monitoring), overwrites in place
 * included; writes and reads are counted as commands.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { AIMessage } from '@langchain/core/messages';
import type { BaseMessage } from '@langchain/core/messages';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { MessagesDeltaValue, StateSchema } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MongoDBSaver } from '@langchain/langgraph-checkpoint-mongodb';
import { BSON, MongoClient } from 'mongodb';
import type * as PeerDriver from 'mongodb';
import { InMemoryEventBus, WatchedStreams, uuidv7 } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import type { AgentDefinition } from '@keel/events';
import type { CallContext } from '../services/agent/src/call-context.js';
import { ConversationService } from '../services/agent/src/conversation/conversation.service.js';
import { TenantConfigService } from '../services/agent/src/tenant-config/tenant-config.service.js';
import type { BenchInfra } from './lib/infra.js';
import { backendWord, freshName } from './lib/infra.js';
import { interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';
import type { Metered } from './lib/write-meter.js';
import { WriteMeter } from './lib/write-meter.js';
import { FINAL_ANSWER, LOOKUP, QUESTION, orderResult } from './step-persistence.bench.js';

const LENGTHS = (process.env.BENCH_PEER_STEPS ?? '10,20,40,80').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_PEER_ROUNDS ?? 5);
const TENANT = 'bench';
const AGENT_ID = 'orders';
const KEEL = 'keel';
const LG = 'langgraph (default checkpoints)';
const LG_DELTA = 'langgraph (MessagesDeltaValue)';

// The checkpointer brings its own MongoDB driver (6.x): documents it writes hold that driver's
// BSON types, so it gets a client, and the meter a size function, of that driver.
const peerRequire = createRequire(
  createRequire(import.meta.url).resolve('@langchain/langgraph-checkpoint-mongodb'),
);
const peerMongo = peerRequire('mongodb') as typeof PeerDriver;

const stepText = (step: number, steps: number): string =>
  `Looking up order A-${1000 + step} (${step} of ${steps - 1}).`;
const stepArgs = (step: number) => ({
  orderId: `A-${1000 + step}`,
  fields: ['status', 'items', 'shipping', 'totals'],
});
const usage = (step: number, last: boolean) => ({
  input_tokens: 900 + 420 * step,
  output_tokens: last ? 110 : 38,
  total_tokens: 900 + 420 * step + (last ? 110 : 38),
});

/**
 * A chat model that answers from a script: one `lookup_order` call per step until the last,
 * then the final answer; the step is told by the tool results already in the conversation.
 */
class ScriptedChatModel extends BaseChatModel {
  constructor(private readonly steps: number) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const step = messages.filter((m) => m.getType() === 'tool').length + 1;
    const last = step >= this.steps;
    const message = new AIMessage({
      id: uuidv7(),
      content: last ? FINAL_ANSWER : stepText(step, this.steps),
      tool_calls: last
        ? []
        : [{ id: `call_${uuidv7()}`, name: LOOKUP.name, args: stepArgs(step), type: 'tool_call' }],
      usage_metadata: usage(step, last),
    });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

const lookupTool = tool(
  async ({ orderId }: { orderId: string }) => JSON.stringify(orderResult(Number(orderId.slice(2)) - 1000)),
  {
    name: LOOKUP.name,
    description: LOOKUP.description,
    schema: LOOKUP.inputSchema as Record<string, unknown>,
  },
);

interface Turn {
  ms: number;
  metered: Metered;
  /** Keel only: what placing the turn's commits in the global log wrote afterwards (the relay's work). */
  sequencing?: Metered;
}

/** Keel: create, send, then per step RecordModelOutput (+ recordToolResult), as step-persistence. */
async function keelContender(client: MongoClient, meter: WriteMeter, dbName: string, steps: number) {
  const store = new MongoEventStore(client.db(dbName));
  await store.init();
  const bus = new InMemoryEventBus();
  // The tenant's configuration (the agent and its tool) as the agent process reads it: remembered
  // while the bus's watch vouches for it (reads again after its 5 s, or a change heard), not read
  // per command. Nothing here changes it during the turns.
  const config = new TenantConfigService(store, undefined, new WatchedStreams(bus));
  const conversations = new ConversationService(store, bus, config);
  const agent: AgentDefinition = {
    agentId: AGENT_ID,
    model: 'openai:gpt-4o-mini',
    instructions: 'You help customers with their orders. Look orders up before answering.',
    tools: [LOOKUP.name],
    maxSteps: steps,
    temperature: 0,
    toolResultMaxChars: 4_000,
  };
  const context = (role: CallContext['role'] = 'editor'): CallContext => ({
    tenantId: TENANT,
    keyId: 'key_bench',
    role,
    userId: 'user-42',
    correlationId: randomUUID(),
  });
  const at = new Date().toISOString();
  await config.apply(context('admin'), { type: 'PutTool', tool: LOOKUP, at });
  await config.apply(context('admin'), { type: 'PutAgent', agent, at });
  await store.sequence({ discover: true });
  return async (): Promise<Turn> => {
    meter.take();
    const start = now();
    const ctx = context();
    const { id } = await conversations.create(ctx, { agentId: AGENT_ID });
    const { turnId } = await conversations.send(ctx, id, { content: QUESTION });
    for (let step = 1; step <= steps; step++) {
      const last = step === steps;
      const toolCallId = uuidv7();
      await conversations.run(ctx, id, {
        type: 'RecordModelOutput',
        turnId,
        step,
        messageId: uuidv7(),
        text: last ? FINAL_ANSWER : stepText(step, steps),
        toolCalls: last
          ? []
          : [
              {
                toolCallId,
                name: LOOKUP.name,
                args: stepArgs(step),
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
      if (!last)
        await conversations.recordToolResult(ctx, id, { toolCallId, ok: true, result: orderResult(step) });
    }
    const ms = now() - start;
    const metered = meter.take();
    await store.sequence({ discover: true });
    return { ms, metered, sequencing: meter.take() };
  };
}

/** LangGraph's prebuilt ReAct agent with the MongoDB checkpointer; `delta` swaps in MessagesDeltaValue. */
async function langGraphContender(
  client: PeerDriver.MongoClient,
  meter: WriteMeter,
  dbName: string,
  steps: number,
  delta: boolean,
) {
  const checkpointer = new MongoDBSaver({ client: client as never, dbName });
  const errors = await checkpointer.setup();
  if (errors.length > 0) throw new AggregateError(errors, 'MongoDBSaver.setup failed');
  const agent = createReactAgent({
    llm: new ScriptedChatModel(steps),
    tools: [lookupTool],
    checkpointer,
    ...(delta ? { stateSchema: new StateSchema({ messages: MessagesDeltaValue }) as never } : {}),
  });
  return async (): Promise<Turn> => {
    meter.take();
    const start = now();
    const result = (await agent.invoke(
      { messages: [{ role: 'user', content: QUESTION }] },
      { configurable: { thread_id: randomUUID() }, recursionLimit: 2 * steps + 10 },
    )) as { messages: BaseMessage[] };
    const ms = now() - start;
    const metered = meter.take();
    const answer = result.messages.at(-1);
    if (answer?.content !== FINAL_ANSWER || result.messages.length !== 2 * steps) {
      throw new Error(
        `LangGraph's turn ended with ${result.messages.length} messages, not the scripted answer`,
      );
    }
    return { ms, metered };
  };
}

interface Measured {
  steps: number;
  turns: Map<string, Turn[]>;
}

async function measureLength(infra: BenchInfra, steps: number): Promise<Measured> {
  const keelClient = new MongoClient(infra.mongoUrl, { monitorCommands: true, maxPoolSize: 8 });
  const peerClient = new peerMongo.MongoClient(infra.mongoUrl, { monitorCommands: true, maxPoolSize: 8 });
  const keelMeter = new WriteMeter(keelClient, (d) => BSON.calculateObjectSize(d as BSON.Document));
  const peerMeter = new WriteMeter(peerClient, (d) => peerMongo.BSON.calculateObjectSize(d as never));
  const dbs = {
    keel: freshName('bench_peer_keel'),
    lg: freshName('bench_peer_lg'),
    delta: freshName('bench_peer_lgd'),
  };
  try {
    await Promise.all([keelClient.connect(), peerClient.connect()]);
    const runs = new Map<string, () => Promise<Turn>>([
      [KEEL, await keelContender(keelClient, keelMeter, dbs.keel, steps)],
      [LG, await langGraphContender(peerClient, peerMeter, dbs.lg, steps, false)],
      [LG_DELTA, await langGraphContender(peerClient, peerMeter, dbs.delta, steps, true)],
    ]);
    const turns = new Map<string, Turn[]>([...runs.keys()].map((label) => [label, []]));
    await interleave(
      [...runs].map(([label, run]) => ({
        label,
        batch: async () => {
          const turn = await run();
          if (process.env.BENCH_PEER_VERBOSE) {
            console.error(`  ${steps} steps, ${label}: ${turn.ms.toFixed(0)} ms, ${turn.metered.bytes} B`);
          }
          turns.get(label)!.push(turn);
          return { latencies: [turn.ms], wallMs: turn.ms };
        },
      })),
      { rounds: ROUNDS },
    );
    // interleave's warm-up round is the first turn of each: drop it here too.
    for (const list of turns.values()) list.shift();
    return { steps, turns };
  } finally {
    await keelClient
      .db(dbs.keel)
      .dropDatabase()
      .catch(() => undefined);
    await peerClient
      .db(dbs.lg)
      .dropDatabase()
      .catch(() => undefined);
    await peerClient
      .db(dbs.delta)
      .dropDatabase()
      .catch(() => undefined);
    await Promise.all([keelClient.close(), peerClient.close()]);
  }
}

const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;
const medianOf = (turns: Turn[], pick: (t: Turn) => number): number => median(turns.map(pick));

function rowsOf(measured: Measured[]): Row[] {
  const rows: Row[] = [];
  for (const { steps, turns } of measured) {
    const lgMs = medianOf(turns.get(LG)!, (t) => t.ms);
    for (const [label, list] of turns) {
      const s = summarize(list.map((t) => t.ms));
      rows.push({
        scenario: `${steps}-step turn`,
        variant: label,
        n: s.n,
        p50Ms: s.p50,
        p99Ms: s.p99,
        bytesPerOp: medianOf(list, (t) => t.metered.bytes),
        ...(label === LG ? {} : { ratio: s.p50 / lgMs }),
      });
    }
  }
  return rows;
}

function notesOf(measured: Measured[], infra: BenchInfra): string[] {
  const line = (label: string, pick: (t: Turn) => number, format: (v: number) => string): string =>
    measured.map(({ steps, turns }) => `${steps}: ${format(medianOf(turns.get(label)!, pick))}`).join(', ');
  const growth = (label: string): string =>
    measured
      .slice(1)
      .map((m, i) => {
        const before = medianOf(measured[i]!.turns.get(label)!, (t) => t.metered.bytes);
        return `×${(medianOf(m.turns.get(label)!, (t) => t.metered.bytes) / before).toFixed(2)}`;
      })
      .join(', ');
  const ratios = (label: string, pick: (t: Turn) => number): string =>
    measured
      .map(({ steps, turns }) => {
        const keel = medianOf(turns.get(KEEL)!, pick);
        return `${steps}: ${(keel / medianOf(turns.get(label)!, pick)).toFixed(2)}`;
      })
      .join(', ');
  const notes = [
    `Bytes written per turn (median), by steps — Keel ${line(KEEL, (t) => t.metered.bytes, kb)}; ` +
      `LangGraph default ${line(LG, (t) => t.metered.bytes, kb)}; LangGraph delta ${line(LG_DELTA, (t) => t.metered.bytes, kb)}.`,
    `Growth of bytes per doubling of the steps (10→20, 20→40, 40→80): Keel ${growth(KEEL)}; LangGraph default ` +
      `${growth(LG)}; LangGraph delta ${growth(LG_DELTA)} (×2 = linear in the steps, ×4 = quadratic).`,
    `Keel's bytes over LangGraph's (below 1 = Keel writes less): vs default ${ratios(LG, (t) => t.metered.bytes)}; ` +
      `vs delta ${ratios(LG_DELTA, (t) => t.metered.bytes)}. Keel's time over LangGraph's (p50): vs default ` +
      `${ratios(LG, (t) => t.ms)}; vs delta ${ratios(LG_DELTA, (t) => t.ms)} (goal: bytes below both, time at most 0.5).`,
    `Write commands per turn: Keel ${line(KEEL, (t) => t.metered.writes, String)}; LangGraph default ` +
      `${line(LG, (t) => t.metered.writes, String)}; delta ${line(LG_DELTA, (t) => t.metered.writes, String)}. ` +
      `Documents written: Keel ${line(KEEL, (t) => t.metered.documents, String)}; LangGraph default ` +
      `${line(LG, (t) => t.metered.documents, String)}; delta ${line(LG_DELTA, (t) => t.metered.documents, String)}.`,
    `Read commands per turn: Keel ${line(KEEL, (t) => t.metered.reads, String)}; LangGraph default ` +
      `${line(LG, (t) => t.metered.reads, String)}; delta ${line(LG_DELTA, (t) => t.metered.reads, String)}.`,
    `Keel's bytes by collection: commits ${line(KEEL, (t) => t.metered.bytesByCollection.commits ?? 0, kb)}; ` +
      `snapshots (the conversation's whole state, every 512 events: none in these turns) ` +
      `${line(KEEL, (t) => t.metered.bytesByCollection.snapshots ?? 0, kb)}.`,
    `Not in Keel's figures above: placing the turn's commits in the global log, which the outbox relay does after ` +
      `the turn, off its path: ${line(KEEL, (t) => t.sequencing?.bytes ?? 0, kb)} in ` +
      `${line(KEEL, (t) => t.sequencing?.writes ?? 0, String)} writes per turn.`,
    `Store backend ${infra.mongoBackend} (${backendWord(infra)}); each contender in its own fresh database on the ` +
      `same server, ${ROUNDS} turns per length after one warm-up turn, contenders interleaved.`,
  ];
  return notes;
}

export const peerCheckpointBench: Bench = {
  name: 'peer-checkpoint',
  needsNats: false,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const measured: Measured[] = [];
    for (const steps of LENGTHS) measured.push(await measureLength(infra, steps));
    return {
      name: 'peer-checkpoint',
      title: "The peer side by side: Keel's event log vs LangGraph's MongoDB checkpointer, 10 to 80 steps",
      description: [
        `The same scripted turn (a user question, then N steps: N-1 model outputs with one lookup_order call and its ` +
          `~600-byte JSON result, then the final answer; same texts and sizes as step-persistence) persisted three ` +
          `ways on the same server: keel = ConversationService on the MongoEventStore (create, send, RecordModelOutput ` +
          `and recordToolResult per step; no relay, no LLM; the tenant's configuration remembered while the bus's ` +
          `watch vouches for it, as in the agent process); LangGraph ${LG.replace('langgraph ', '')} = ` +
          `createReactAgent (LangGraph 1.7.3) with a scripted chat model, the lookup tool and MongoDBSaver ` +
          `(@langchain/langgraph-checkpoint-mongodb 1.4.1); LangGraph delta = the same with ` +
          `stateSchema messages: MessagesDeltaValue.`,
        `bytes/op = BSON bytes of every insert, update and findAndModify the driver sent during the turn (command ` +
          `monitoring: overwrites in place count each time); p50/p99 = the turn's wall time; ratio = the row's p50 ` +
          `over LangGraph default's.`,
      ],
      rows: rowsOf(measured),
      notes: notesOf(measured, infra),
    };
  },
};
