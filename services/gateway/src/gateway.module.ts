import { Module } from '@nestjs/common';
import { HealthController } from './health/health.controller.js';

/** The gateway: for now the HTTP probes; the public API (API.md) comes in later issues. */
@Module({ controllers: [HealthController] })
export class GatewayModule {}
