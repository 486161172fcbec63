import type { GrpcServiceDefinition } from '@keel/runtime';

/** The gRPC contracts the gateway serves (besides health and reflection): main.ts and the dev mode use these. */
export const GATEWAY_GRPC_SERVICES: readonly GrpcServiceDefinition[] = [
  { package: 'keel.conversations.v1', protoFile: 'keel/conversations/v1/conversations.proto' },
  { package: 'keel.pricing.v1', protoFile: 'keel/pricing/v1/pricing.proto' },
  { package: 'keel.usage.v1', protoFile: 'keel/usage/v1/usage.proto' },
  { package: 'keel.operator.v1', protoFile: 'keel/operator/v1/operator.proto' },
];
