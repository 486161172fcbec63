import {
  KEEL_PRICING_V1_PACKAGE_NAME,
  protobufFileName as pricingProtoFile,
} from '@keel/proto/keel/pricing/v1/pricing';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Inject, Module } from '@nestjs/common';
import { loadCatalogueFile } from './catalogue/catalogue-file.js';
import { PricingController } from './grpc/pricing.grpc.js';
import { PriceOverrideLog } from './overrides/price-override-log.js';
import { PricingService } from './pricing/pricing.service.js';

/**
 * The pricing service: the model price catalogue shipped with the code, operators' overrides
 * from the `pricing-catalogue` stream, and costs (keel.pricing.v1.PricingService).
 */
@Module({
  controllers: [PricingController],
  providers: [
    {
      provide: PricingService,
      inject: [KEEL_INFRA, KEEL_LOGGER],
      useFactory: (infra: Infrastructure, logger: KeelLogger) =>
        new PricingService(
          loadCatalogueFile(),
          // The bus's watch spares a read of the override stream per question (see PriceOverrideLog).
          new PriceOverrideLog(infra.store, Date.now, {
            watched: infra.watched,
            bus: infra.bus,
            onUnheard: (version) =>
              logger.warn(
                { version },
                'price override not seen on the bus: other instances see it within KEEL_WATCH_MAX_AGE_MS',
              ),
          }),
        ),
    },
  ],
})
export class PricingModule implements OnApplicationBootstrap, OnModuleDestroy {
  constructor(
    @Inject(PricingService) private readonly pricing: PricingService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  onModuleDestroy(): void {
    this.pricing.close();
  }

  /** Rebuilds the overrides from the log before the first call is served. */
  async onApplicationBootstrap(): Promise<void> {
    const overrides = await this.pricing.loadOverrides();
    this.logger.info(
      {
        catalogueVersion: this.pricing.catalogue.version,
        models: this.pricing.catalogue.entries.length,
        overrides,
      },
      'price catalogue loaded',
    );
  }
}

/** The gRPC contracts the pricing service serves: main.ts and the one-process dev mode both bootstrap with these. */
export const PRICING_GRPC_SERVICES = [{ package: KEEL_PRICING_V1_PACKAGE_NAME, protoFile: pricingProtoFile }];
