import { bootstrapService } from '@keel/runtime';
import { PricingModule } from './pricing.module.js';

await bootstrapService({ service: 'pricing', module: PricingModule });
