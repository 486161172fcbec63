import { bootstrapService } from '@keel/runtime';
import { AuditModule } from './audit.module.js';

await bootstrapService({ service: 'audit', module: AuditModule });
