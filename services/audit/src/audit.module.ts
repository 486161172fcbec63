import { KEEL_INFRA, KEEL_SERVICE_METRICS, readEnv } from '@keel/runtime';
import type { Infrastructure, ServiceMetrics } from '@keel/runtime';
import {
  KEEL_AUDIT_V1_PACKAGE_NAME,
  protobufFileName as auditProtoFile,
} from '@keel/proto/keel/audit/v1/audit';
import {
  KEEL_USAGE_V1_PACKAGE_NAME,
  protobufFileName as usageProtoFile,
} from '@keel/proto/keel/usage/v1/usage';
import type { OnApplicationBootstrap } from '@nestjs/common';
import { Inject, Module } from '@nestjs/common';
import { AuditController } from './grpc/audit.grpc.js';
import { UsageController } from './grpc/usage.grpc.js';
import { AuditConsumer } from './projection/audit-consumer.js';
import { AuditProjector } from './projection/audit-projector.js';
import type { AuditStorage } from './storage/audit-storage.js';
import { AUDIT_STORAGE, auditStorageFor } from './storage/audit-storage.provider.js';

/**
 * `KEEL_AUDIT_ACK_WAIT_MS`: how long a delivery taken by an audit process that died blocks the
 * consumer before another instance (or the restarted one) takes it. Default 30 s.
 */
const ackWaitFromEnv = (): number => Number(readEnv('KEEL_AUDIT_ACK_WAIT_MS'));

/**
 * The audit service: projects every event of the log into usage rollups (15-minute buckets per
 * tenant × user × model × agent) and the audit trail, and serves them over gRPC
 * (keel.usage.v1.UsageService, keel.audit.v1.AuditService) to the gateway.
 */
@Module({
  controllers: [UsageController, AuditController],
  providers: [
    {
      provide: AUDIT_STORAGE,
      inject: [KEEL_INFRA],
      useFactory: (infra: Infrastructure) => auditStorageFor(infra),
    },
    {
      provide: AuditProjector,
      inject: [KEEL_INFRA, AUDIT_STORAGE, { token: KEEL_SERVICE_METRICS, optional: true }],
      useFactory: (infra: Infrastructure, storage: AuditStorage, metrics?: ServiceMetrics) =>
        new AuditProjector(infra.store, storage, {
          // keel_tenant_cost_usd_total: the cost per tenant Grafana shows (deploy/grafana).
          ...(metrics
            ? { onCost: (tenantId: string, costUsd: number) => metrics.tenantCost(tenantId, costUsd) }
            : {}),
        }),
    },
    {
      provide: AuditConsumer,
      inject: [KEEL_INFRA, AuditProjector],
      // infra.bus tracks the consumer, so the infrastructure's shutdown drains it. The relay tells
      // where fast-published events were placed.
      useFactory: (infra: Infrastructure, projector: AuditProjector) =>
        new AuditConsumer(infra.bus, projector, {
          ackWaitMs: ackWaitFromEnv(),
          store: infra.store,
          placed: infra.relay,
        }),
    },
  ],
})
export class AuditModule implements OnApplicationBootstrap {
  constructor(@Inject(AuditConsumer) private readonly consumer: AuditConsumer) {}

  /** Consumes the log once every provider is built (before the service reports ready). */
  async onApplicationBootstrap(): Promise<void> {
    await this.consumer.start();
  }
}

/** The gRPC contracts the audit service serves: main.ts and the one-process dev mode both bootstrap with these. */
export const AUDIT_GRPC_SERVICES = [
  { package: KEEL_USAGE_V1_PACKAGE_NAME, protoFile: usageProtoFile },
  { package: KEEL_AUDIT_V1_PACKAGE_NAME, protoFile: auditProtoFile },
];
