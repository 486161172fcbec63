import { bootstrapService } from '@keel/runtime';
import { GatewayModule } from './gateway.module.js';
import { createGatewayHttpAdapter } from './http/http-adapter.js';

await bootstrapService({
  service: 'gateway',
  module: GatewayModule,
  httpAdapter: createGatewayHttpAdapter,
});
