import { KEEL_AGENT_V1_PACKAGE_NAME, protobufFileName } from '@keel/proto/keel/agent/v1/agent';
import { bootstrapService } from '@keel/runtime';
import { AgentModule } from './agent.module.js';

await bootstrapService({
  service: 'agent',
  module: AgentModule,
  grpcServices: [{ package: KEEL_AGENT_V1_PACKAGE_NAME, protoFile: protobufFileName }],
});
