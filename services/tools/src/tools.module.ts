import { Module } from '@nestjs/common';

/** The tools service (executes tool calls read from NATS); for now it serves gRPC health and reflection only. */
@Module({})
export class ToolsModule {}
