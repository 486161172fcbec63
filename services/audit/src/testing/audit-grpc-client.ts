// A typed client of the audit service's two RPCs, for tests and benchmarks: requests take the
// generated message types (fields left out get their proto defaults), answers are decoded ones.
import type { ListAuditEntriesResponse } from '@keel/proto/keel/audit/v1/audit';
import { AuditServiceService, ListAuditEntriesRequest } from '@keel/proto/keel/audit/v1/audit';
import type { GetUsageResponse } from '@keel/proto/keel/usage/v1/usage';
import { GetUsageRequest, UsageServiceService } from '@keel/proto/keel/usage/v1/usage';
import { GrpcClient } from '@keel/runtime';

/** Calls keel.usage.v1.UsageService and keel.audit.v1.AuditService at `address`. */
export class AuditGrpcClient {
  private readonly client: GrpcClient;

  constructor(address: string) {
    this.client = new GrpcClient(address, { deadlineMs: 10_000 });
  }

  getUsage(
    request: Pick<GetUsageRequest, 'tenantId' | 'from' | 'to'> & Partial<GetUsageRequest>,
  ): Promise<GetUsageResponse> {
    return this.client.unary(UsageServiceService.getUsage, GetUsageRequest.fromPartial(request));
  }

  listAuditEntries(
    request: Pick<ListAuditEntriesRequest, 'tenantId'> & Partial<ListAuditEntriesRequest>,
  ): Promise<ListAuditEntriesResponse> {
    return this.client.unary(
      AuditServiceService.listAuditEntries,
      ListAuditEntriesRequest.fromPartial(request),
    );
  }

  close(): void {
    this.client.close();
  }
}
