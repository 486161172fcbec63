// A grpc-js client of the audit service's two RPCs, for tests and benchmarks.
import type { Client, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';

type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, metadata: Metadata, options: { deadline: Date }, callback: Callback) => void;

/** A usage answer as proto-loader gives it. */
export interface UsageReply {
  totals: { promptTokens: number; completionTokens: number; costUsd: number; turns: number };
  rows: Array<{
    key: string;
    promptTokens: number;
    completionTokens: number;
    costUsd: number;
    turns: number;
  }>;
}

/** Calls keel.usage.v1.UsageService and keel.audit.v1.AuditService at `address`. */
export class AuditGrpcClient {
  private readonly usage: Client;
  private readonly audit: Client;

  constructor(address: string) {
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

  getUsage(request: {
    tenantId: string;
    from: string;
    to: string;
    tz?: string;
    groupBy?: 'GROUP_BY_DAY' | 'GROUP_BY_MODEL' | 'GROUP_BY_USER';
  }): Promise<UsageReply> {
    return call(this.usage, 'getUsage', request);
  }

  listAuditEntries(request: { tenantId: string; limit?: number; cursor?: string; type?: string }): Promise<{
    data: Array<Record<string, unknown>>;
    nextCursor: string;
  }> {
    return call(this.audit, 'listAuditEntries', request);
  }

  close(): void {
    this.usage.close();
    this.audit.close();
  }
}

const call = <T>(client: Client, rpc: string, request: object): Promise<T> => {
  const method = (client as unknown as Record<string, Unary>)[rpc]!;
  return new Promise<T>((resolve, reject) => {
    method.call(
      client,
      request,
      new Metadata(),
      { deadline: new Date(Date.now() + 10_000) },
      (error, response) => (error ? reject(error) : resolve(response as T)),
    );
  });
};
