import { bootstrapService } from '@keel/runtime';
import { AgentModule } from './agent.module.js';

await bootstrapService({ service: 'agent', module: AgentModule });
