import type { ListAuditEntriesRequest, ListAuditEntriesResponse } from '@keel/proto/keel/audit/v1/audit';
import { AuditServiceService } from '@keel/proto/keel/audit/v1/audit';
import type { GetUsageRequest, GetUsageResponse } from '@keel/proto/keel/usage/v1/usage';
import { UsageServiceService } from '@keel/proto/keel/usage/v1/usage';
import { GrpcClient } from '@keel/runtime';
import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import { keelErrorOf } from '../agent-client/grpc-errors.js';

/** Where the audit service's gRPC server listens unless `AUDIT_GRPC_URL` says otherwise (its default port). */
export const DEFAULT_AUDIT_GRPC_URL = '127.0.0.1:50054';

/** How long one audit call may take before the request is answered 503. */
export const AUDIT_CALL_DEADLINE_MS = 10_000;

/** The audit service's address: `AUDIT_GRPC_URL`, else its default port on this host. */
export const auditAddressFromEnv = (env: NodeJS.ProcessEnv = process.env): string =>
  env.AUDIT_GRPC_URL?.trim() || DEFAULT_AUDIT_GRPC_URL;

/**
 * A typed client of the audit service (keel.usage.v1.UsageService and keel.audit.v1.AuditService,
 * both served at one address). The tenant it sends is trusted there: callers decide it from the
 * authenticated principal. A failed call becomes the KeelError the HTTP edge renders.
 */
@Injectable()
export class AuditServiceClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = auditAddressFromEnv(), deadlineMs = AUDIT_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, {
      deadlineMs,
      errorOf: (failure) => keelErrorOf(failure) ?? failure,
    });
  }

  /** GetUsage for the tenant in the request. */
  getUsage(request: GetUsageRequest): Promise<GetUsageResponse> {
    return this.client.unary(UsageServiceService.getUsage, request);
  }

  /** One page of a tenant's audit trail. */
  listAuditEntries(request: ListAuditEntriesRequest): Promise<ListAuditEntriesResponse> {
    return this.client.unary(AuditServiceService.listAuditEntries, request);
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
