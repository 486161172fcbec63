import type { Client, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { KeelErrorCode } from '@keel/core';
import { KeelError, UnavailableError } from '@keel/core';
import { DEFAULT_GRPC_PORTS, PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';

/** How long one pricing call may take before the caller is told UNAVAILABLE. */
export const PRICING_CALL_DEADLINE_MS = 5_000;

/** The pricing service's address: `PRICING_GRPC_URL`, else its default port on this host. */
export const pricingAddressFromEnv = (env: NodeJS.ProcessEnv = process.env): string =>
  env.PRICING_GRPC_URL?.trim() || `127.0.0.1:${DEFAULT_GRPC_PORTS.pricing}`;

/** Statuses of the pricing service passed on to the caller as they are (with the service's message). */
const PASSED_ON: Readonly<Partial<Record<number, KeelErrorCode>>> = {
  [status.INVALID_ARGUMENT]: 'INVALID_ARGUMENT',
  [status.NOT_FOUND]: 'NOT_FOUND',
  [status.ALREADY_EXISTS]: 'ALREADY_EXISTS',
  [status.FAILED_PRECONDITION]: 'FAILED_PRECONDITION',
  [status.ABORTED]: 'ABORTED',
  [status.PERMISSION_DENIED]: 'PERMISSION_DENIED',
  [status.RESOURCE_EXHAUSTED]: 'RESOURCE_EXHAUSTED',
};

/**
 * The KeelError a failed pricing call becomes: the service's typed statuses keep their code and
 * message; unreachable or slow is UNAVAILABLE; anything else (INTERNAL, UNIMPLEMENTED, …) is a
 * fault of the platform, returned as a plain error so the edge answers INTERNAL and logs it.
 */
export const pricingErrorOf = (failure: ServiceError): Error => {
  const code = PASSED_ON[failure.code];
  if (code) return new KeelError(code, failure.details || failure.message, { cause: failure });
  if (failure.code === status.UNAVAILABLE || failure.code === status.DEADLINE_EXCEEDED) {
    return new UnavailableError('the pricing service is unavailable, retry later', { cause: failure });
  }
  return failure;
};

type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, metadata: Metadata, options: { deadline: Date }, callback: Callback) => void;

/** A grpc-js client of keel.pricing.v1.PricingService for the gateway's pass-through. */
@Injectable()
export class PricingClient implements OnModuleDestroy {
  private readonly client: Client;

  constructor(
    address: string = pricingAddressFromEnv(),
    private readonly deadlineMs = PRICING_CALL_DEADLINE_MS,
  ) {
    const definition = loadSync('keel/pricing/v1/pricing.proto', {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const root = loadPackageDefinition(definition) as unknown as {
      keel: { pricing: { v1: { PricingService: ServiceClientConstructor } } };
    };
    this.client = new root.keel.pricing.v1.PricingService(address, credentials.createInsecure());
  }

  /** Calls `rpc` (proto-loader's camelCase name) with `request` as received; resolves its response. */
  call(rpc: string, request: object, correlationId: string): Promise<unknown> {
    const method = (this.client as unknown as Record<string, Unary | undefined>)[rpc];
    if (!method) return Promise.reject(new Error(`PricingService has no RPC ${rpc}`));
    const metadata = new Metadata();
    metadata.set('x-request-id', correlationId);
    const deadline = new Date(Date.now() + this.deadlineMs);
    return new Promise((resolve, reject) => {
      method.call(this.client, request, metadata, { deadline }, (error, response) => {
        if (error) reject(pricingErrorOf(error));
        else resolve(response);
      });
    });
  }

  onModuleDestroy(): void {
    this.client.close();
  }
}
