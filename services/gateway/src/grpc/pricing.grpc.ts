import type { Metadata } from '@grpc/grpc-js';
import type {
  ComputeCostRequest,
  GetPriceRequest,
  ListModelsRequest,
  SetPriceRequest,
} from '@keel/proto/keel/pricing/v1/pricing';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { Observable } from 'rxjs';
import { from } from 'rxjs';
import type { RouteRole } from '../auth/principal.js';
import type { GrpcCaller, HeaderSink } from './grpc-caller.js';
import { GrpcCallerResolver } from './grpc-caller.js';
import { PricingClient } from './pricing.client.js';
import { rpcErrorOf } from './rpc-error.js';

const SERVICE = 'keel.pricing.v1.PricingService';
/** Reads: any key. */
const ANY_KEY: readonly RouteRole[] = ['viewer', 'operator'];
const OPERATOR: readonly RouteRole[] = ['operator'];

/**
 * keel.pricing.v1.PricingService on the gateway: a pass-through to the pricing service
 * (PRICING_GRPC_URL) with a deadline, after the same authentication, roles and rate limit as
 * every gateway call. Prices are read by any key; SetPrice needs the operator key, and the
 * gateway, not the caller, says who set the price and under which request id.
 */
@Controller()
export class PricingGrpcController {
  constructor(
    @Inject(GrpcCallerResolver) private readonly callers: GrpcCallerResolver,
    @Inject(PricingClient) private readonly pricing: PricingClient,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  @GrpcMethod(SERVICE, 'GetPrice')
  getPrice(request: GetPriceRequest, metadata?: Metadata, call?: HeaderSink): Observable<unknown> {
    return this.forward('GetPrice', ANY_KEY, metadata, call, (caller) =>
      this.pricing.getPrice(request, caller.requestId),
    );
  }

  @GrpcMethod(SERVICE, 'ListModels')
  listModels(request: ListModelsRequest, metadata?: Metadata, call?: HeaderSink): Observable<unknown> {
    return this.forward('ListModels', ANY_KEY, metadata, call, (caller) =>
      this.pricing.listModels(request, caller.requestId),
    );
  }

  @GrpcMethod(SERVICE, 'ComputeCost')
  computeCost(request: ComputeCostRequest, metadata?: Metadata, call?: HeaderSink): Observable<unknown> {
    return this.forward('ComputeCost', ANY_KEY, metadata, call, (caller) =>
      this.pricing.computeCost(request, caller.requestId),
    );
  }

  @GrpcMethod(SERVICE, 'SetPrice')
  setPrice(request: SetPriceRequest, metadata?: Metadata, call?: HeaderSink): Observable<unknown> {
    return this.forward('SetPrice', OPERATOR, metadata, call, (caller) =>
      this.pricing.setPrice(
        {
          ...request,
          actor: {
            keyId: caller.principal.keyId,
            role: caller.principal.role,
            userId: caller.principal.userId,
          },
          correlationId: caller.requestId,
        },
        caller.requestId,
      ),
    );
  }

  private forward(
    method: string,
    roles: readonly RouteRole[],
    metadata: Metadata | undefined,
    call: HeaderSink | undefined,
    work: (caller: GrpcCaller) => Promise<unknown>,
  ): Observable<unknown> {
    let requestId: string | undefined;
    const run = async () => {
      try {
        const caller = await this.callers.resolve(metadata, roles, method, call ? { call } : {});
        requestId = caller.requestId;
        return await work(caller);
      } catch (error) {
        throw rpcErrorOf(error, this.logger, { rpc: `PricingService.${method}`, correlationId: requestId });
      }
    };
    return from(run());
  }
}
