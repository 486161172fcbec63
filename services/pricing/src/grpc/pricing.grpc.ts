import type {
  ComputeCostRequest,
  ComputeCostResponse,
  GetPriceRequest,
  GetPriceResponse,
  ListModelsResponse,
  ModelPrice as ModelPriceMessage,
  PricingServiceController,
  SetPriceRequest,
  SetPriceResponse,
} from '@keel/proto/keel/pricing/v1/pricing';
import { PricingServiceControllerMethods } from '@keel/proto/keel/pricing/v1/pricing';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import type { ModelPrice } from '../catalogue/price.js';
import { PricingService } from '../pricing/pricing.service.js';

/** A price as keel.pricing.v1.ModelPrice. */
export const priceMessage = (price: ModelPrice): ModelPriceMessage => ({
  model: price.model,
  inputUsdPerMtok: price.inputUsdPerMtok,
  outputUsdPerMtok: price.outputUsdPerMtok,
  ...(price.cacheReadUsdPerMtok !== undefined ? { cacheReadUsdPerMtok: price.cacheReadUsdPerMtok } : {}),
  ...(price.cacheWriteUsdPerMtok !== undefined ? { cacheWriteUsdPerMtok: price.cacheWriteUsdPerMtok } : {}),
  contextWindowTokens: price.contextWindowTokens,
  effectiveFrom: price.effectiveFrom ?? '',
  source: price.source,
});

/**
 * keel.pricing.v1.PricingService: maps requests to the PricingService and errors to gRPC statuses
 * (bad input INVALID_ARGUMENT naming the field, an unknown model NOT_FOUND on GetPrice).
 */
@Controller()
@PricingServiceControllerMethods()
export class PricingController implements PricingServiceController {
  constructor(
    @Inject(PricingService) private readonly pricing: PricingService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  getPrice(request: GetPriceRequest): Promise<GetPriceResponse> {
    return this.call('GetPrice', async () => ({
      price: priceMessage(await this.pricing.getPrice(request.model, request.at)),
    }));
  }

  listModels(): Promise<ListModelsResponse> {
    return this.call('ListModels', async () => ({
      models: (await this.pricing.listModels()).map(priceMessage),
    }));
  }

  computeCost(request: ComputeCostRequest): Promise<ComputeCostResponse> {
    return this.call('ComputeCost', async () => {
      const answer = await this.pricing.computeCost(request);
      return answer.costUsd === undefined
        ? { reason: answer.reason }
        : { costUsd: answer.costUsd, reason: '', price: priceMessage(answer.price) };
    });
  }

  setPrice(request: SetPriceRequest): Promise<SetPriceResponse> {
    return this.call('SetPrice', async () => {
      const price = await this.pricing.setPrice(request, {
        ...(request.actor ? { actor: request.actor } : {}),
        correlationId: request.correlationId,
      });
      this.logger.info(
        { model: price.model, effectiveFrom: price.effectiveFrom, correlationId: request.correlationId },
        'price override recorded',
      );
      return { price: priceMessage(price) };
    });
  }

  private async call<T>(rpc: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw toRpcException(error, this.logger, { rpc });
    }
  }
}
