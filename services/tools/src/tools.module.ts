import { MongoEventStore } from '@keel/core/mongodb';
import type { Infrastructure, KeelConfig, KeelLogger, ServiceMetrics } from '@keel/runtime';
import {
  KEEL_CONFIG,
  KEEL_INFRA,
  KEEL_LOGGER,
  KEEL_SERVICE_METRICS,
  SecretBox,
  egressPolicyFromEnv,
  readEnv,
} from '@keel/runtime';
import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { Inject, Module } from '@nestjs/common';
import { InMemoryToolCallLedger, MongoToolCallLedger, WebhookExecutor } from './execution/index.js';
import { McpExecutor } from './execution/mcp-executor.js';
import type { ToolCallLedger } from './execution/index.js';
import { outcomeSealing } from './execution/outcome-sealing.js';
import { TenantToolsCache } from './tool-calls/tenant-tools.js';
import { ToolCallConsumer } from './tool-calls/tool-call.consumer.js';
import { HookDeliveries } from './hooks/hook-deliveries.js';
import type { HookLaneStore } from './hooks/hook-lanes.js';
import { InMemoryHookLaneStore } from './hooks/hook-lanes.js';
import { scheduleOf } from './hooks/hook-policy.js';
import { createHookSender } from './hooks/hook-sender.js';
import { MongoHookLaneStore } from './hooks/mongo-hook-lanes.js';

/**
 * Largest webhook response accepted: half the log's 1 MiB event limit, so a result always fits
 * in its ToolCallExecuted event.
 */
const MAX_WEBHOOK_RESPONSE_BYTES = 512 * 1024;

/** The master key from `KEEL_MASTER_KEY`, or none (webhook calls then fail as misconfigured). */
const secretBoxFromEnv = (
  logger: KeelLogger,
  env: NodeJS.ProcessEnv = process.env,
): SecretBox | undefined => {
  const masterKey = env['KEEL_MASTER_KEY']?.trim();
  if (masterKey) return new SecretBox(masterKey);
  logger.warn(
    {},
    'KEEL_MASTER_KEY is not set: tenant webhook secrets cannot be opened, so webhook tool calls fail (built-ins still run)',
  );
  return undefined;
};

/**
 * `KEEL_TOOLS_ACK_WAIT_MS`: how long a call taken by a process that died stays with it before
 * another instance takes it over (running calls keep their delivery alive). Default 10 s (the schema's).
 */
const ackWaitFromEnv = (env: NodeJS.ProcessEnv = process.env): number =>
  Number(readEnv('KEEL_TOOLS_ACK_WAIT_MS', env));

/** The exactly-once ledger next to the event log: MongoDB when the log is, else in memory (dev mode). */
const ledgerFor = (infra: Infrastructure): ToolCallLedger =>
  infra.store instanceof MongoEventStore
    ? new MongoToolCallLedger(infra.store.db, { sealing: outcomeSealing(infra.erasure) })
    : new InMemoryToolCallLedger();

/** The hook lanes next to the event log: MongoDB when the log is, else in memory (dev mode). */
const hookLanesFor = (infra: Infrastructure): HookLaneStore =>
  infra.store instanceof MongoEventStore
    ? new MongoHookLaneStore(infra.store.db)
    : new InMemoryHookLaneStore();

/** Hook deliveries (API.md "Hooks"): `KEEL_HOOKS_*` tune retries, leases and polling. */
const hookDeliveriesFor = (
  infra: Infrastructure,
  tenants: TenantToolsCache,
  logger: KeelLogger,
): HookDeliveries => {
  const log = logger.child({ component: 'hooks' });
  const secrets = secretBoxFromEnv(log);
  return new HookDeliveries(
    {
      store: infra.store,
      bus: infra.bus,
      lanes: hookLanesFor(infra),
      // Hook URLs are tenant URLs: the same egress policy, checked again at every send.
      send: createHookSender({ egress: egressPolicyFromEnv() }),
      tenantHooks: (tenantId) => tenants.get(tenantId),
      ...(secrets ? { secrets } : {}),
      logger: log,
    },
    {
      schedule: scheduleOf(String(readEnv('KEEL_HOOKS_BACKOFF_MS'))),
      leaseMs: Number(readEnv('KEEL_HOOKS_LEASE_MS')),
      pollMs: Number(readEnv('KEEL_HOOKS_POLL_MS')),
    },
  );
};

/**
 * Tenants' tools and hooks, one cache for the calls and the hook deliveries of this process: a
 * tenant is read when the bus says its configuration changed, not at every lookup (see
 * TenantToolsCache for the trade-off).
 */
const TENANT_TOOLS = Symbol('TenantToolsCache');

/**
 * The tools service: executes the tool calls of conversations once (ToolCallConsumer) and
 * records their outcomes as `ToolCallExecuted`; serves gRPC health and reflection.
 */
@Module({
  providers: [
    {
      provide: TENANT_TOOLS,
      inject: [KEEL_INFRA],
      useFactory: (infra: Infrastructure) => new TenantToolsCache(infra.store, { watched: infra.watched }),
    },
    {
      provide: ToolCallConsumer,
      inject: [KEEL_INFRA, TENANT_TOOLS, KEEL_LOGGER, { token: KEEL_SERVICE_METRICS, optional: true }],
      useFactory: (
        infra: Infrastructure,
        tenantTools: TenantToolsCache,
        logger: KeelLogger,
        metrics: ServiceMetrics | undefined,
      ) => {
        const log = logger.child({ component: 'tool-calls' });
        const secrets = secretBoxFromEnv(log);
        const ackWaitMs = ackWaitFromEnv();
        // infra.bus tracks the consumer, so the infrastructure's shutdown drains it before the outbox flush.
        return new ToolCallConsumer(
          {
            store: infra.store,
            bus: infra.bus,
            ledger: ledgerFor(infra),
            // KEEL_EGRESS_ALLOW: the ranges a webhook URL may reach though not public.
            webhooks: new WebhookExecutor({
              maxResponseBytes: MAX_WEBHOOK_RESPONSE_BYTES,
              egress: egressPolicyFromEnv(),
            }),
            // MCP servers are tenant URLs too: the same egress policy.
            mcp: new McpExecutor({ egress: egressPolicyFromEnv() }),
            tenantTools,
            ...(secrets ? { secrets } : {}),
            ...(metrics ? { metrics } : {}),
            logger: log,
          },
          ackWaitMs === undefined ? {} : { ackWaitMs },
        );
      },
    },
    {
      provide: HookDeliveries,
      inject: [KEEL_INFRA, TENANT_TOOLS, KEEL_LOGGER],
      useFactory: (infra: Infrastructure, tenants: TenantToolsCache, logger: KeelLogger) =>
        hookDeliveriesFor(infra, tenants, logger),
    },
  ],
})
export class ToolsModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(
    @Inject(ToolCallConsumer) private readonly consumer: ToolCallConsumer,
    @Inject(HookDeliveries) private readonly hooks: HookDeliveries,
    @Inject(KEEL_CONFIG) private readonly config: KeelConfig,
  ) {}

  /** Takes tool calls once every provider is built (before the service reports ready). */
  async onApplicationBootstrap(): Promise<void> {
    await this.consumer.start();
    await this.hooks.start();
  }

  /**
   * Lets running calls finish for a third of the shutdown timeout, then aborts the rest: their
   * deliveries go back to the bus and another instance resumes them with the same
   * Idempotency-Key, while this process still exits within its deadline.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([
      this.consumer.stop({ graceMs: Math.floor(this.config.shutdownTimeoutMs / 3) }),
      this.hooks.stop(),
    ]);
  }
}
