import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthController } from './health/health.controller.js';
import { ProblemFilter } from './http/problem.filter.js';

/** The gateway: the HTTP probes and the public API (API.md), every error as problem+json. */
@Module({
  controllers: [HealthController],
  providers: [{ provide: APP_FILTER, useClass: ProblemFilter }],
})
export class GatewayModule {}
