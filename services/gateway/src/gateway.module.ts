import type { KeelConfig, KeelLogger } from '@keel/runtime';
import { KEEL_CONFIG, KEEL_LOGGER } from '@keel/runtime';
import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { ApprovalsController, RunningTurnsController } from './activity/approvals.controller.js';
import { ActivityProjection } from './activity/activity.service.js';
import { AgentClient, agentAddressFromEnv } from './agent-client/agent.client.js';
import { AuditController } from './audit/audit.controller.js';
import { AuthGuard } from './auth/auth.guard.js';
import { Authenticator } from './auth/authenticator.js';
import { MeController } from './auth/me.controller.js';
import { OPERATOR_KEY, operatorKeyFromEnv } from './auth/operator-key.js';
import { ConfigController } from './config/config.controller.js';
import { ConversationsController } from './conversations/conversations.controller.js';
import { ConversationDeletionController } from './conversations/conversation-deletion.controller.js';
import { ConversationEraser } from './conversations/conversation-eraser.service.js';
import { ConversationManagementController } from './conversations/conversation-management.controller.js';
import { ConversationsGrpcController } from './grpc/conversations.grpc.js';
import { ToolResultsController } from './conversations/tool-results.controller.js';
import { GrpcCallerResolver } from './grpc/grpc-caller.js';
import { PricingClient, pricingAddressFromEnv } from './grpc/pricing.client.js';
import { PricingGrpcController } from './grpc/pricing.grpc.js';
import { HealthController } from './health/health.controller.js';
import { ProblemFilter } from './http/problem.filter.js';
import { IdempotencyInterceptor } from './idempotency/idempotency.interceptor.js';
import { IdempotencyService } from './idempotency/idempotency.service.js';
import { RateLimitGuard } from './rate-limit/rate-limit.guard.js';
import { RATE_LIMITER, RateLimitService, createRateLimiter } from './rate-limit/rate-limit.service.js';
import { EventsFeedController } from './feed/events-feed.controller.js';
import { EventsFeedService, FEED_SETTINGS, feedSettingsFromEnv } from './feed/events-feed.service.js';
import { TurnFeedService } from './feed/turn-feed.service.js';
import { LogFeedController } from './feed/log-feed.controller.js';
import { DeadLettersController } from './operator/dead-letters.controller.js';
import { OperatorController } from './operator/operator.controller.js';
import { OperatorGrpcController } from './operator/operator.grpc.js';
import { OverviewService } from './operator/overview.service.js';
import { KeyUsage } from './tenants/key-usage.js';
import { KeysController } from './tenants/keys.controller.js';
import { TenantDirectory } from './tenants/tenant-directory.js';
import { TenantRegistryService } from './tenants/tenant-registry.service.js';
import { TenantsController } from './tenants/tenants.controller.js';
import { AuditServiceClient, auditAddressFromEnv } from './usage/audit-service.client.js';
import { UsageController } from './usage/usage.controller.js';
import { UsageReader } from './usage/usage-reader.js';
import { UsageGrpcController } from './usage/usage.grpc.js';
import { RunClient } from './runs/run.client.js';
import { TeamsController } from './runs/teams.controller.js';
import { McpClient } from './mcp/mcp.client.js';
import { McpServersController } from './mcp/mcp.controller.js';
import { HooksClient } from './hooks/hooks.client.js';
import { HooksController } from './hooks/hooks.controller.js';
import { ModelsClient } from './models/models.client.js';
import { ModelsController } from './models/models.controller.js';
import { RunsController } from './runs/runs.controller.js';
import { RunFeedController } from './runs/run-feed.controller.js';

/** The gateway: the HTTP probes and the public API (API.md); every route authenticated but the probes. */
@Module({
  controllers: [
    HealthController,
    MeController,
    TenantsController,
    KeysController,
    ConfigController,
    ConversationsController,
    ConversationDeletionController,
    ToolResultsController,
    ConversationManagementController,
    EventsFeedController,
    LogFeedController,
    ApprovalsController,
    RunningTurnsController,
    OperatorController,
    DeadLettersController,
    UsageController,
    AuditController,
    TeamsController,
    McpServersController,
    HooksController,
    ModelsController,
    RunFeedController,
    RunsController,
    // gRPC (GATEWAY_GRPC_SERVICES): the same API for services inside the platform.
    ConversationsGrpcController,
    PricingGrpcController,
    UsageGrpcController,
    OperatorGrpcController,
  ],
  providers: [
    { provide: APP_FILTER, useClass: ProblemFilter },
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
    IdempotencyService,
    // After the AuthGuard (guards run in this order): it counts the authenticated key.
    { provide: APP_GUARD, useClass: RateLimitGuard },
    {
      provide: RATE_LIMITER,
      inject: [KEEL_CONFIG, KEEL_LOGGER],
      useFactory: (config: KeelConfig, logger: KeelLogger) => createRateLimiter(config, logger),
    },
    RateLimitService,
    Authenticator,
    GrpcCallerResolver,
    { provide: PricingClient, useFactory: () => new PricingClient(pricingAddressFromEnv()) },
    {
      provide: OPERATOR_KEY,
      inject: [KEEL_LOGGER],
      useFactory: (logger: KeelLogger) => {
        const key = operatorKeyFromEnv();
        if (key === undefined) logger.warn('KEEL_OPERATOR_KEY is not set: operator routes answer 401');
        return key;
      },
    },
    TenantDirectory,
    TenantRegistryService,
    ConversationEraser,
    KeyUsage,
    { provide: AgentClient, useFactory: () => new AgentClient(agentAddressFromEnv()) },
    // keel.run.v1.RunService: teams and runs, served by the agent.
    { provide: RunClient, useFactory: () => new RunClient(agentAddressFromEnv()) },
    // keel.mcp.v1.McpService: the tenant's MCP servers, served by the agent.
    { provide: McpClient, useFactory: () => new McpClient(agentAddressFromEnv()) },
    // keel.hooks.v1.HookService: the tenant's hooks, served by the agent.
    { provide: HooksClient, useFactory: () => new HooksClient(agentAddressFromEnv()) },
    // keel.models.v1.ModelsService: model access and defaults, served by the agent.
    { provide: ModelsClient, useFactory: () => new ModelsClient(agentAddressFromEnv()) },
    { provide: AuditServiceClient, useFactory: () => new AuditServiceClient(auditAddressFromEnv()) },
    UsageReader,
    { provide: FEED_SETTINGS, useFactory: () => feedSettingsFromEnv() },
    EventsFeedService,
    TurnFeedService,
    ActivityProjection,
    OverviewService,
  ],
})
export class GatewayModule {}
