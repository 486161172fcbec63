import { Module } from '@nestjs/common';

/** The audit service (keeps the audit trail and usage rollups); for now it serves gRPC health and reflection only. */
@Module({})
export class AuditModule {}
