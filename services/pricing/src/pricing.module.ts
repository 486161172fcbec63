import { Module } from '@nestjs/common';

/** The pricing service (serves the model price catalogue and costs); for now it serves gRPC health and reflection only. */
@Module({})
export class PricingModule {}
