/**
 * The overhead of a sub-agent level, in one process on the real adapters: a turn of an agent whose
 * chain of sub-agents is L levels deep (the agent's TurnWorker with a scripted model, the
 * SubAgentManager creating each child and reporting its answer, MongoEventStore on the run's
 * server → OutboxRelay → NATS), from the send to the root's TurnCompleted, and the events it
 * appended. Against the same L + 1 agents' turns run directly by a client, one after another (the
 * nearest thing without sub-agents: as many conversations and turns, no linking).
 */
import { randomUUID } from 'node:crypto';
import type { EventData } from '@keel/core';
import { OutboxRelay } from '@keel/core';
import { MongoCheckpointStore, MongoDeadLetterStore, MongoInbox, MongoLeaseStore } from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';
import type { AgentDefinition } from '@keel/events';
import { createLogger } from '@keel/runtime';
import type { CallContext } from '../services/agent/src/call-context.js';
import { ConversationService } from '../services/agent/src/conversation/conversation.service.js';
import { AjvToolCatalog } from '../services/agent/src/grpc/tool-catalog.provider.js';
import type { ModelStep } from '../services/agent/src/model/model-step.js';
import { SubAgentManager } from '../services/agent/src/sub-agents/sub-agent-manager.js';
import { TenantConfigService } from '../services/agent/src/tenant-config/tenant-config.service.js';
import { TurnWorker } from '../services/agent/src/turn/turn-worker.js';
import type { BenchInfra } from './lib/infra.js';
import { backendWord, freshName, freshStore } from './lib/infra.js';
import { ObservedBus } from './lib/observed-bus.js';
import type { ObservedAppend } from './lib/observed-store.js';
import { ObservedStore } from './lib/observed-store.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { median, now, summarize } from './lib/stats.js';
import { deleteStreams } from './request-reply-baseline.js';

const TENANT = 'bench';
/** Chains of 1, 2 and 3 sub-agent levels under the root. */
const LEVELS = [1, 2, 3];
const ROUNDS = 12;

/** Agent `c<n>` offers `c<n-1>` as its sub-agent; `c0` answers alone. */
const agentOf = (n: number): AgentDefinition => ({
  agentId: `c${n}`,
  model: 'openai:gpt-bench',
  instructions: `agent:c${n};`,
  tools: [],
  maxSteps: 3,
  temperature: 0,
  toolResultMaxChars: 2_000,
  ...(n > 0 ? { options: { agents: [`c${n - 1}`] } } : {}),
});

/** The model, scripted: an agent with a sub-agent hands the task down first, then answers; `c0` answers at once. */
const scriptedModel: ModelStep = async (input) => {
  const system = input.messages.find((m) => m.role === 'system')?.content ?? '';
  const below = /agent:c(\d+);/.exec(system)?.[1];
  const handsDown =
    below !== undefined && Number(below) > 0 && !input.messages.some((m) => m.role === 'tool');
  return {
    text: handsDown ? '' : `answer of c${below}`,
    toolCalls: handsDown
      ? [
          {
            toolCallId: 'call_1',
            name: `agent__c${Number(below) - 1}`,
            args: { task: 'the task, handed down' },
          },
        ]
      : [],
    usage: { promptTokens: 100, completionTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 },
    model: 'gpt-bench',
    contextTokens: 110,
  };
};

/** Counts appended events and resolves a stream's TurnCompleted. */
class Watch {
  events = 0;
  private readonly ended = new Map<string, () => void>();
  readonly onAppend = (append: ObservedAppend): void => {
    this.events += append.events.length;
    if (append.events.some((e: EventData) => e.type === 'TurnCompleted' || e.type === 'TurnFailed')) {
      this.ended.get(append.streamName)?.();
    }
  };
  turnEnded(stream: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no end of ${stream}`)), 60_000);
      this.ended.set(stream, () => {
        clearTimeout(timer);
        this.ended.delete(stream);
        resolve();
      });
    });
  }
}

const context = (): CallContext => ({
  tenantId: TENANT,
  keyId: 'key_bench',
  role: 'editor',
  userId: 'user-42',
  correlationId: randomUUID(),
});

/** One turn of `agentId` in a new conversation, to its end: ms and events appended (children included). */
const turn = async (conversations: ConversationService, watch: Watch, agentId: string) => {
  const ctx = context();
  const before = watch.events;
  const start = now();
  const { id } = await conversations.create(ctx, { agentId });
  const ended = watch.turnEnded(conversations.stream(id));
  await conversations.send(ctx, id, { content: 'Do the task.' });
  await ended;
  // The root's end is committed after its children's: every event of the chain is counted.
  return { ms: now() - start, events: watch.events - before };
};

export const subAgentsBench: Bench = {
  name: 'sub-agents',
  needsNats: true,
  async run(infra: BenchInfra): Promise<BenchReport> {
    const problems: string[] = [];
    const logger = createLogger('bench', {
      level: 'info',
      destination: {
        write: (line: string) => {
          // No pricing service here: every model call is unpriced, as the notes of the other benches say.
          if (line.includes('model call not priced')) return;
          if (/"level":"(warn|error|fatal)"/.test(line) && problems.length < 5) problems.push(line.trim());
        },
      },
    });
    const { store, drop } = await freshStore(infra, 'bench_subagents');
    const natsStream = freshName('BENCH_SUBAGENTS').toUpperCase();
    const watch = new Watch();
    const bus = await NatsEventBus.connect({
      servers: infra.natsUrl,
      streamName: natsStream,
      subjectPrefix: `${freshName('bench')}.keel`,
      inbox: new MongoInbox(store.db),
      deadLetters: new MongoDeadLetterStore(store.db),
      connectionName: 'keel-bench-sub-agents',
      logger: logger.child({ component: 'bus' }),
    });
    const relay = new OutboxRelay({
      store,
      bus,
      checkpoints: new MongoCheckpointStore(store.db),
      leases: new MongoLeaseStore(store.db),
      logger: logger.child({ component: 'outbox' }),
    });
    const observed = new ObservedStore(store, watch.onAppend);
    const observedBus = new ObservedBus(bus, () => undefined);
    const config = new TenantConfigService(observed);
    const conversations = new ConversationService(observed, observedBus, config);
    const worker = new TurnWorker({
      store: observed,
      bus: observedBus,
      conversations,
      config,
      modelStep: scriptedModel,
      catalog: new AjvToolCatalog(),
      logger: logger.child({ component: 'turn-worker' }),
    });
    const manager = new SubAgentManager({ store: observed, bus: observedBus, conversations, config, logger });
    try {
      const admin = { ...context(), role: 'admin' as const };
      for (let n = 0; n <= Math.max(...LEVELS); n++) {
        const at = new Date().toISOString();
        await config.apply(admin, { type: 'PutAgent', agent: agentOf(n), at });
        // The direct turns' agents: the same, without a sub-agent (they answer at once).
        const plain = { ...agentOf(0), agentId: `p${n}`, instructions: `plain:p${n};` };
        await config.apply(admin, { type: 'PutAgent', agent: plain, at });
      }
      relay.start();
      await worker.start();
      await manager.start();
      const keel = new Map<number, Array<{ ms: number; events: number }>>();
      const direct = new Map<number, Array<{ ms: number; events: number }>>();
      for (let round = 0; round <= ROUNDS; round++) {
        for (const level of LEVELS) {
          const chain = await turn(conversations, watch, `c${level}`);
          // Directly: the same agents' turns, one after another, from the leaf up.
          const start = now();
          let events = 0;
          for (let n = 0; n <= level; n++) events += (await turn(conversations, watch, `p${n}`)).events;
          const plain = { ms: now() - start, events };
          if (round === 0) continue; // warm-up
          keel.set(level, [...(keel.get(level) ?? []), chain]);
          direct.set(level, [...(direct.get(level) ?? []), plain]);
        }
      }
      const rows: Row[] = withRatios(
        LEVELS.flatMap((level): Row[] =>
          (
            [
              ['keel', keel],
              ['raw', direct],
            ] as const
          ).map(([variant, runs]) => {
            const s = summarize(runs.get(level)!.map((r) => r.ms));
            return { scenario: `chain of ${level} level(s)`, variant, n: s.n, p50Ms: s.p50, p99Ms: s.p99 };
          }),
        ),
      );
      const perLevel = LEVELS.map((level) => {
        const k = keel.get(level)!;
        const d = direct.get(level)!;
        const ms = (median(k.map((r) => r.ms)) - median(d.map((r) => r.ms))) / level;
        const events = (median(k.map((r) => r.events)) - median(d.map((r) => r.events))) / level;
        return `${level} level(s): +${ms.toFixed(1)} ms and +${events.toFixed(0)} events per level (chain ${median(k.map((r) => r.events))} events, direct ${median(d.map((r) => r.events))})`;
      });
      return {
        name: 'sub-agents',
        title: 'Sub-agent overhead per level vs the same turns run directly',
        description: [
          `One process, the real adapters (MongoEventStore on ${infra.mongoBackend}, OutboxRelay, NatsEventBus): ` +
            `keel = a turn of agent c<L> in a new conversation, whose sub-agent c<L-1> … c0 each run as a child ` +
            `conversation (TurnWorker with a scripted model, no LLM; the SubAgentManager creates each child, submits ` +
            `its task and records its answer as the parent's tool result), from create + send to the root's ` +
            `TurnCompleted. raw = the same L + 1 agents' turns run directly by a client, one after another (create + ` +
            `send, each to its end): as many conversations and turns, without the tool call, the link and the hops.`,
          `${ROUNDS} rounds after a warm-up round, the two interleaved per level.`,
        ],
        rows,
        notes: [
          `Overhead per level (medians, keel minus raw, divided by the levels; events = appended to the log): ` +
            `${perLevel.join('; ')}. Store backend: ${backendWord(infra)}.`,
          `Per level the chain adds the parent's tool call (AssistantMessageCompleted with the call, UsageRecorded, ` +
            `ToolCallRequested), the child's result (ToolCallCompleted), the parent's second model step, and two ` +
            `hops through NATS (the manager's delivery of the request, then of the child's end).`,
          ...(problems.length > 0 ? [`Keel logged warnings or errors: ${problems.join(' | ')}`] : []),
        ],
      };
    } finally {
      await manager.stop().catch(() => undefined);
      await worker.stop().catch(() => undefined);
      await relay.stop().catch(() => undefined);
      await bus.close().catch(() => undefined);
      await deleteStreams(infra.natsUrl, [natsStream]).catch(() => undefined);
      await drop();
    }
  },
};
