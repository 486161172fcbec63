import { Module } from '@nestjs/common';

/** The agent service (owns the conversation aggregate and runs turns); for now it serves gRPC health and reflection only. */
@Module({})
export class AgentModule {}
