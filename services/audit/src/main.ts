import { bootstrapService } from '@keel/runtime';
import { AUDIT_GRPC_SERVICES, AuditModule } from './audit.module.js';

await bootstrapService({ service: 'audit', module: AuditModule, grpcServices: AUDIT_GRPC_SERVICES });
