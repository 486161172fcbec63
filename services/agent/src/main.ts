import { bootstrapService } from '@keel/runtime';
import { AGENT_GRPC_SERVICES, AgentModule } from './agent.module.js';

await bootstrapService({ service: 'agent', module: AgentModule, grpcServices: AGENT_GRPC_SERVICES });
