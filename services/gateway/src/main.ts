import { bootstrapService } from '@keel/runtime';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { GatewayModule } from './gateway.module.js';

await bootstrapService({
  service: 'gateway',
  module: GatewayModule,
  httpAdapter: () => new FastifyAdapter(),
});
