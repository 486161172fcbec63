import type { Client, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
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

/** Request of keel.usage.v1.UsageService/GetUsage (proto-loader field names; enums by name). */
export interface UsageRequest {
  tenantId: string;
  from: string;
  to: string;
  tz: string;
  groupBy: 'GROUP_BY_DAY' | 'GROUP_BY_MODEL' | 'GROUP_BY_USER';
}

/** Figures of a usage total or row. */
export interface UsageFigures {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  turns: number;
}

/** Response of GetUsage. */
export interface UsageResponse {
  totals?: UsageFigures;
  rows?: Array<UsageFigures & { key: string }>;
}

/** One entry of ListAuditEntries. */
export interface AuditEntryMessage {
  id: string;
  at: string;
  type: string;
  target: string;
  actor?: { keyId: string; role: string; userId: string };
  requestId: string;
  conversationId: string;
  details?: Record<string, string>;
}

/** Response of ListAuditEntries. */
export interface AuditPageResponse {
  data?: AuditEntryMessage[];
  nextCursor: string;
}

type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, metadata: Metadata, options: { deadline: Date }, callback: Callback) => void;

/**
 * A promise-based grpc-js client of the audit service (keel.usage.v1.UsageService and
 * keel.audit.v1.AuditService). The tenant it sends is trusted there: callers decide it from the
 * authenticated principal. A failed call becomes the KeelError the HTTP edge renders.
 */
@Injectable()
export class AuditServiceClient implements OnModuleDestroy {
  private readonly usage: Client;
  private readonly audit: Client;

  constructor(
    address: string = auditAddressFromEnv(),
    private readonly deadlineMs = AUDIT_CALL_DEADLINE_MS,
  ) {
    const definition = loadSync(['keel/usage/v1/usage.proto', 'keel/audit/v1/audit.proto'], {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const root = loadPackageDefinition(definition) as unknown as {
      keel: {
        usage: { v1: { UsageService: ServiceClientConstructor } };
        audit: { v1: { AuditService: ServiceClientConstructor } };
      };
    };
    this.usage = new root.keel.usage.v1.UsageService(address, credentials.createInsecure());
    this.audit = new root.keel.audit.v1.AuditService(address, credentials.createInsecure());
  }

  /** GetUsage for the tenant in the request. */
  getUsage(request: UsageRequest): Promise<UsageResponse> {
    return this.call(this.usage, 'getUsage', request);
  }

  /** One page of a tenant's audit trail. */
  listAuditEntries(request: {
    tenantId: string;
    limit: number;
    cursor: string;
    type: string;
  }): Promise<AuditPageResponse> {
    return this.call(this.audit, 'listAuditEntries', request);
  }

  onModuleDestroy(): void {
    this.usage.close();
    this.audit.close();
  }

  private call<T>(client: Client, rpc: string, request: object): Promise<T> {
    const method = (client as unknown as Record<string, Unary>)[rpc];
    if (!method) return Promise.reject(new Error(`the audit service has no RPC ${rpc}`));
    const deadline = new Date(Date.now() + this.deadlineMs);
    return new Promise<T>((resolve, reject) => {
      method.call(client, request, new Metadata(), { deadline }, (error, response) => {
        if (error) reject(keelErrorOf(error) ?? error);
        else resolve(response as T);
      });
    });
  }
}
