import type { ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { UnavailableError } from '@keel/core';
import type {
  ComputeCostRequest,
  ComputeCostResponse,
  GetPriceRequest,
  GetPriceResponse,
  ListModelsRequest,
  ListModelsResponse,
  SetPriceRequest,
  SetPriceResponse,
} from '@keel/proto/keel/pricing/v1/pricing';
import { PricingServiceService } from '@keel/proto/keel/pricing/v1/pricing';
import { DEFAULT_GRPC_PORTS, GrpcClient } from '@keel/runtime';
import type { OnModuleDestroy } from '@nestjs/common';
import { Injectable } from '@nestjs/common';
import { keelErrorOf } from '../agent-client/grpc-errors.js';

/** How long one pricing call may take before the caller is told UNAVAILABLE. */
export const PRICING_CALL_DEADLINE_MS = 5_000;

/** The pricing service's address: `PRICING_GRPC_URL`, else its default port on this host. */
export const pricingAddressFromEnv = (env: NodeJS.ProcessEnv = process.env): string =>
  env.PRICING_GRPC_URL?.trim() || `127.0.0.1:${DEFAULT_GRPC_PORTS.pricing}`;

/** Statuses of the pricing service passed on to the caller (with the service's message). */
const PASSED_ON: ReadonlySet<number> = new Set([
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.FAILED_PRECONDITION,
  status.ABORTED,
  status.PERMISSION_DENIED,
  status.RESOURCE_EXHAUSTED,
]);

/**
 * The KeelError a failed pricing call becomes: the service's typed statuses keep their code and
 * message; unreachable or slow is UNAVAILABLE; anything else (INTERNAL, UNIMPLEMENTED, …) is a
 * fault of the platform, returned as a plain error so the edge answers INTERNAL and logs it.
 */
export const pricingErrorOf = (failure: ServiceError): Error => {
  // The same typed errors as the agent's statuses become (ABORTED a ConflictError, …): mapped once.
  if (PASSED_ON.has(failure.code)) return keelErrorOf(failure) ?? failure;
  if (failure.code === status.UNAVAILABLE || failure.code === status.DEADLINE_EXCEEDED) {
    return new UnavailableError('the pricing service is unavailable, retry later', { cause: failure });
  }
  return failure;
};

/**
 * A typed client of keel.pricing.v1.PricingService for the gateway's pass-through: each call
 * carries the request id as `x-request-id` and a deadline, and fails with pricingErrorOf's error.
 */
@Injectable()
export class PricingClient implements OnModuleDestroy {
  private readonly client: GrpcClient;

  constructor(address: string = pricingAddressFromEnv(), deadlineMs = PRICING_CALL_DEADLINE_MS) {
    this.client = new GrpcClient(address, { deadlineMs, errorOf: pricingErrorOf });
  }

  getPrice(request: GetPriceRequest, correlationId: string): Promise<GetPriceResponse> {
    return this.client.unary(PricingServiceService.getPrice, request, this.callOf(correlationId));
  }

  listModels(request: ListModelsRequest, correlationId: string): Promise<ListModelsResponse> {
    return this.client.unary(PricingServiceService.listModels, request, this.callOf(correlationId));
  }

  computeCost(request: ComputeCostRequest, correlationId: string): Promise<ComputeCostResponse> {
    return this.client.unary(PricingServiceService.computeCost, request, this.callOf(correlationId));
  }

  setPrice(request: SetPriceRequest, correlationId: string): Promise<SetPriceResponse> {
    return this.client.unary(PricingServiceService.setPrice, request, this.callOf(correlationId));
  }

  onModuleDestroy(): void {
    this.client.close();
  }

  private callOf(correlationId: string) {
    return { metadata: { 'x-request-id': correlationId } };
  }
}
