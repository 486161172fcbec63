import { bootstrapService } from '@keel/runtime';
import { GatewayModule } from './gateway.module.js';
import { GATEWAY_GRPC_SERVICES } from './grpc/grpc-services.js';
import { createGatewayHttpAdapter } from './http/http-adapter.js';

await bootstrapService({
  service: 'gateway',
  module: GatewayModule,
  grpcServices: GATEWAY_GRPC_SERVICES,
  httpAdapter: createGatewayHttpAdapter,
});
