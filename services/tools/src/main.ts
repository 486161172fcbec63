import { bootstrapService } from '@keel/runtime';
import { ToolsModule } from './tools.module.js';

await bootstrapService({ service: 'tools', module: ToolsModule });
