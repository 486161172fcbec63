import { bootstrapService } from '@keel/runtime';
import { PRICING_GRPC_SERVICES, PricingModule } from './pricing.module.js';

await bootstrapService({ service: 'pricing', module: PricingModule, grpcServices: PRICING_GRPC_SERVICES });
