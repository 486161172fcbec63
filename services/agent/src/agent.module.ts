import {
  KEEL_AGENT_V1_PACKAGE_NAME,
  protobufFileName as agentProtoFile,
} from '@keel/proto/keel/agent/v1/agent';
import { KEEL_RUN_V1_PACKAGE_NAME, protobufFileName as runProtoFile } from '@keel/proto/keel/run/v1/run';
import {
  KEEL_MODELS_V1_PACKAGE_NAME,
  protobufFileName as modelsProtoFile,
} from '@keel/proto/keel/models/v1/models';
import { MongoEventStore } from '@keel/core/mongodb';
import type { Infrastructure, KeelLogger, ServiceMetrics } from '@keel/runtime';
import {
  KEEL_INFRA,
  KEEL_LOGGER,
  KEEL_SERVICE_METRICS,
  SecretBox,
  egressPolicyFromEnv,
  readEnv,
} from '@keel/runtime';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { Inject, Module } from '@nestjs/common';
import type { ConversationIndex } from './conversation-index/conversation-index.js';
import { ConversationIndexProjection } from './conversation-index/conversation-index.projection.js';
import { indexEntrySource } from './conversation-index/index-entry-source.js';
import { InMemoryConversationIndex } from './conversation-index/in-memory-conversation-index.js';
import { MongoConversationIndex } from './conversation-index/mongo-conversation-index.js';
import { BudgetDirectory } from './budget/budget-directory.js';
import { BudgetSettlement } from './budget/budget-settlement.js';
import { DEFAULT_TURN_RESERVE_USD, TurnBudgets } from './budget/turn-budgets.js';
import { AgentController } from './grpc/agent.grpc.js';
import { AjvToolCatalog, TOOL_CATALOG } from './grpc/tool-catalog.provider.js';
import { createModelStep } from './model/langchain-model-step.js';
import type { ModelStep } from './model/model-step.js';
import { GrpcUsagePricing } from './pricing/grpc-usage-pricing.js';
import type { UsagePricing } from './pricing/usage-pricing.js';
import { ConversationService } from './conversation/conversation.service.js';
import { TenantConfigService } from './tenant-config/tenant-config.service.js';
import { TurnWorker } from './turn/turn-worker.js';
import { DefaultsService } from './models/defaults.service.js';
import { ModelsController } from './models/models.grpc.js';
import { RunController } from './team/team.grpc.js';
import { MCP_LISTER, McpController } from './mcp/mcp.grpc.js';
import { createMcpLister } from './mcp/mcp-lister.js';
import { KEEL_MCP_V1_PACKAGE_NAME, protobufFileName as mcpProtoFile } from '@keel/proto/keel/mcp/v1/mcp';
import {
  KEEL_HOOKS_V1_PACKAGE_NAME,
  protobufFileName as hooksProtoFile,
} from '@keel/proto/keel/hooks/v1/hooks';
import { HooksController } from './hooks/hooks.grpc.js';
import { RunManager } from './run/run-manager.js';
import { SubAgentManager } from './sub-agents/sub-agent-manager.js';
import { RunService } from './run/run.service.js';
import { InMemoryDeadlines } from './deadlines/deadlines.js';
import { MongoDeadlines } from './deadlines/mongo-deadlines.js';
import { ClientCallDeadlines } from './turn/client-call-deadlines.js';

/** Nest injection token of the ModelStep the turn worker calls (a test may provide a scripted one). */
export const MODEL_STEP = Symbol.for('keel.agent.model-step');

/** Nest injection token of the UsagePricing the turn worker prices model calls with (the pricing service over gRPC). */
export const USAGE_PRICING = Symbol.for('keel.agent.usage-pricing');

/** Nest injection token of the per-tenant ConversationIndex. */
export const CONVERSATION_INDEX = Symbol.for('keel.agent.conversation-index');

/** The conversation index next to the event log: MongoDB when the log is, else in memory (dev mode). */
const conversationIndexFor = (infra: Infrastructure): ConversationIndex =>
  infra.store instanceof MongoEventStore
    ? new MongoConversationIndex(infra.store.db)
    : new InMemoryConversationIndex();

/**
 * The floor of a turn's budget reservation in USD (`KEEL_BUDGET_TURN_RESERVE_USD`, default 0.05);
 * a turn reserves the larger of it and the tenant's largest turn of the month.
 */
const turnReserveUsd = (env: NodeJS.ProcessEnv = process.env): number =>
  Number(readEnv('KEEL_BUDGET_TURN_RESERVE_USD', env) ?? DEFAULT_TURN_RESERVE_USD);

/** How stale the agent's copy of the tenants' budgets may be (`KEEL_BUDGET_REFRESH_MS`, default 1000). */
const budgetDirectoryOptions = (env: NodeJS.ProcessEnv = process.env) => ({
  maxAgeMs: Number(readEnv('KEEL_BUDGET_REFRESH_MS', env)),
});

/**
 * The master key from `KEEL_MASTER_KEY`; without one, a key made up for this process, so dev
 * mode runs without setup, at the price of sealed secrets that no later process can open.
 */
const secretBoxFromEnv = (logger: KeelLogger, env: NodeJS.ProcessEnv = process.env): SecretBox => {
  const masterKey = env['KEEL_MASTER_KEY']?.trim();
  if (masterKey) return new SecretBox(masterKey);
  logger.warn(
    {},
    'KEEL_MASTER_KEY is not set: using a key generated in memory; provider keys and webhook secrets sealed now will not open after a restart',
  );
  return new SecretBox(SecretBox.generateKey());
};

/**
 * The agent service: owns the conversation aggregate and the tenant configuration, serves them
 * to the gateway over gRPC (keel.agent.v1.AgentService), and runs turns with the TurnWorker.
 */
@Module({
  controllers: [AgentController, RunController, ModelsController, McpController, HooksController],
  providers: [
    {
      provide: DefaultsService,
      inject: [KEEL_INFRA],
      // Watched: defaults put through another agent process apply once their event is on the bus.
      useFactory: (infra: Infrastructure) => new DefaultsService(infra.store, infra.watched),
    },
    // MCP servers are tenant URLs: listed through the same egress policy as every tenant URL.
    { provide: MCP_LISTER, useFactory: () => createMcpLister(egressPolicyFromEnv()) },
    {
      provide: SecretBox,
      inject: [KEEL_LOGGER],
      useFactory: (logger: KeelLogger) => secretBoxFromEnv(logger),
    },
    {
      provide: TenantConfigService,
      inject: [KEEL_INFRA],
      // KEEL_EGRESS_ALLOW: the ranges a tenant's webhook or provider URL may name though not public.
      // Watched: a change made through another agent process is used once its event is on the bus.
      useFactory: (infra: Infrastructure) =>
        new TenantConfigService(infra.store, egressPolicyFromEnv(), infra.watched),
    },
    {
      provide: CONVERSATION_INDEX,
      inject: [KEEL_INFRA],
      useFactory: (infra: Infrastructure): ConversationIndex => conversationIndexFor(infra),
    },
    {
      provide: ConversationIndexProjection,
      inject: [KEEL_INFRA, CONVERSATION_INDEX, ConversationService],
      useFactory: (infra: Infrastructure, index: ConversationIndex, conversations: ConversationService) =>
        new ConversationIndexProjection(infra.bus, index, indexEntrySource(conversations)),
    },
    {
      provide: TurnBudgets,
      inject: [KEEL_INFRA, KEEL_LOGGER],
      useFactory: (infra: Infrastructure, logger: KeelLogger) =>
        new TurnBudgets(infra.store, new BudgetDirectory(infra.store, budgetDirectoryOptions()), {
          reserveUsd: turnReserveUsd(),
          logger: logger.child({ component: 'budgets' }),
        }),
    },
    {
      provide: BudgetSettlement,
      inject: [KEEL_INFRA, TurnBudgets],
      useFactory: (infra: Infrastructure, budgets: TurnBudgets) =>
        new BudgetSettlement(infra.store, infra.bus, budgets),
    },
    {
      provide: ConversationService,
      inject: [
        KEEL_INFRA,
        TenantConfigService,
        CONVERSATION_INDEX,
        KEEL_LOGGER,
        TurnBudgets,
        DefaultsService,
      ],
      useFactory: (
        infra: Infrastructure,
        config: TenantConfigService,
        index: ConversationIndex,
        logger: KeelLogger,
        budgets: TurnBudgets,
        defaults: DefaultsService,
      ) =>
        new ConversationService(infra.store, infra.bus, config, {
          index,
          budgets,
          defaults,
          // Sealing anything under a conversation's key makes that key (once; the value is dropped).
          makeDataKey: (tenantId, id) => infra.erasure.sealFor(tenantId, id, 'data-key', null),
          onIndexError: (error, { tenantId, conversationId }) =>
            logger.warn(
              { tenantId, conversationId, err: error },
              'the conversation index write failed; the agent-conversation-index consumer will record it',
            ),
        }),
    },
    {
      provide: RunService,
      inject: [KEEL_INFRA, TenantConfigService],
      useFactory: (infra: Infrastructure, config: TenantConfigService) => new RunService(infra.store, config),
    },
    {
      provide: RunManager,
      inject: [KEEL_INFRA, RunService, ConversationService, KEEL_LOGGER],
      useFactory: (
        infra: Infrastructure,
        runs: RunService,
        conversations: ConversationService,
        logger: KeelLogger,
      ) =>
        new RunManager({
          deadlines:
            infra.store instanceof MongoEventStore
              ? new MongoDeadlines(infra.store.db, 'run_deadlines')
              : new InMemoryDeadlines(),
          store: infra.store,
          bus: infra.bus,
          runs,
          conversations,
          logger: logger.child({ component: 'run-manager' }),
        }),
    },
    {
      provide: ClientCallDeadlines,
      inject: [KEEL_INFRA, ConversationService, KEEL_LOGGER],
      useFactory: (infra: Infrastructure, conversations: ConversationService, logger: KeelLogger) =>
        new ClientCallDeadlines({
          deadlines:
            infra.store instanceof MongoEventStore
              ? new MongoDeadlines(infra.store.db, 'client_call_deadlines')
              : new InMemoryDeadlines(),
          bus: infra.bus,
          conversations,
          logger: logger.child({ component: 'client-call-deadlines' }),
        }),
    },
    {
      provide: SubAgentManager,
      inject: [KEEL_INFRA, ConversationService, TenantConfigService, KEEL_LOGGER],
      useFactory: (
        infra: Infrastructure,
        conversations: ConversationService,
        config: TenantConfigService,
        logger: KeelLogger,
      ) =>
        new SubAgentManager({
          store: infra.store,
          bus: infra.bus,
          conversations,
          config,
          logger: logger.child({ component: 'sub-agents' }),
        }),
    },
    { provide: TOOL_CATALOG, useFactory: () => new AjvToolCatalog() },
    { provide: MODEL_STEP, useFactory: (): ModelStep => createModelStep() },
    // PRICING_GRPC_URL, else the pricing service's port on this host (dev mode). Not closed on
    // shutdown: steps still draining after the module closes price their usage through it.
    { provide: USAGE_PRICING, useFactory: (): UsagePricing => new GrpcUsagePricing() },
    {
      provide: TurnWorker,
      inject: [
        KEEL_INFRA,
        ConversationService,
        TenantConfigService,
        MODEL_STEP,
        TOOL_CATALOG,
        SecretBox,
        KEEL_LOGGER,
        USAGE_PRICING,
        { token: KEEL_SERVICE_METRICS, optional: true },
      ],
      useFactory: (
        infra: Infrastructure,
        conversations: ConversationService,
        config: TenantConfigService,
        modelStep: ModelStep,
        catalog: AjvToolCatalog,
        secrets: SecretBox,
        logger: KeelLogger,
        pricing: UsagePricing,
        metrics: ServiceMetrics | undefined,
      ) =>
        // infra.bus tracks the worker's consumers, so the shutdown drains them before the outbox flush.
        new TurnWorker({
          store: infra.store,
          bus: infra.bus,
          conversations,
          config,
          modelStep,
          catalog,
          secrets,
          pricing,
          ...(metrics ? { metrics } : {}),
          logger: logger.child({ component: 'turn-worker' }),
          // How long a model step may go silent before another instance takes it over (tests shorten it).
          ackWaitMs: Number(readEnv('KEEL_AGENT_ACK_WAIT_MS')),
          // Model steps this instance runs at once (and the durable's ack-pending bound).
          concurrency: Number(readEnv('KEEL_AGENT_CONCURRENCY')),
        }),
    },
  ],
})
export class AgentModule implements OnApplicationBootstrap {
  constructor(
    @Inject(TurnWorker) private readonly worker: TurnWorker,
    @Inject(ConversationIndexProjection) private readonly index: ConversationIndexProjection,
    @Inject(BudgetSettlement) private readonly settlement: BudgetSettlement,
    @Inject(RunManager) private readonly runManager: RunManager,
    @Inject(SubAgentManager) private readonly subAgents: SubAgentManager,
    @Inject(ClientCallDeadlines) private readonly clientDeadlines: ClientCallDeadlines,
  ) {}

  /**
   * Keeps the conversation index and takes turns once every provider is built. No stop hook:
   * both consume through `infra.bus`, whose shutdown drains its consumers (model steps in
   * progress finish) after the gRPC server has stopped and before the outbox is flushed.
   */
  async onApplicationBootstrap(): Promise<void> {
    await this.index.start();
    await this.settlement.start();
    await this.worker.start();
    await this.runManager.start();
    await this.subAgents.start();
    await this.clientDeadlines.start();
  }
}

/** The gRPC contracts the agent serves: main.ts and the one-process dev mode both bootstrap with these. */
export const AGENT_GRPC_SERVICES = [
  { package: KEEL_AGENT_V1_PACKAGE_NAME, protoFile: agentProtoFile },
  { package: KEEL_RUN_V1_PACKAGE_NAME, protoFile: runProtoFile },
  { package: KEEL_MCP_V1_PACKAGE_NAME, protoFile: mcpProtoFile },
  { package: KEEL_HOOKS_V1_PACKAGE_NAME, protoFile: hooksProtoFile },
  { package: KEEL_MODELS_V1_PACKAGE_NAME, protoFile: modelsProtoFile },
];
