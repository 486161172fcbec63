import type { Metadata } from '@grpc/grpc-js';
import { ValidationError } from '@keel/core';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { Observable } from 'rxjs';
import { from } from 'rxjs';
import type { RouteRole } from '../auth/principal.js';
import type { HeaderSink } from '../grpc/grpc-caller.js';
import { GrpcCallerResolver } from '../grpc/grpc-caller.js';
import { rpcErrorOf } from '../grpc/rpc-error.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { GroupBy, groupByFromJSON } from '@keel/proto/keel/usage/v1/usage';
import { UsageReader } from './usage-reader.js';
import { tenantOfRequest } from './tenant-of-request.js';

/** Reads of usage: any tenant key, or the operator. */
const READERS: readonly RouteRole[] = ['viewer', 'operator'];

/** GetUsage as proto-loader hands it to the server (enums by name). */
interface GetUsageCall {
  from?: string;
  to?: string;
  tz?: string;
  groupBy?: string;
  tenantId?: string;
}

/**
 * keel.usage.v1.UsageService on the gateway's public gRPC server: the same keys, roles and rate
 * limit as every gateway call, the tenant decided as on HTTP (a tenant key reads its own and
 * leaves `tenant_id` empty; the operator names one, or none for every tenant read as one), then
 * the audit service's rollups.
 */
@Controller()
export class UsageGrpcController {
  constructor(
    @Inject(GrpcCallerResolver) private readonly callers: GrpcCallerResolver,
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  @GrpcMethod('keel.usage.v1.UsageService', 'GetUsage')
  getUsage(request: GetUsageCall, metadata?: Metadata, call?: HeaderSink): Observable<unknown> {
    let requestId: string | undefined;
    const run = async () => {
      try {
        const caller = await this.callers.resolve(metadata, READERS, 'GetUsage', call ? { call } : {});
        requestId = caller.requestId;
        const tenantId =
          caller.principal.kind === 'operator' && !request.tenantId
            ? 'all-tenants'
            : await tenantOfRequest(caller.principal, request.tenantId || undefined, this.directory);
        const groupBy = request.groupBy ? groupByFromJSON(request.groupBy) : GroupBy.DAY;
        if (groupBy === GroupBy.TENANT && caller.principal.kind !== 'operator') {
          throw new ValidationError('groupBy GROUP_BY_TENANT is for the operator key', { field: 'groupBy' });
        }
        return await this.usage.read({
          tenantId,
          from: request.from ?? '',
          to: request.to ?? '',
          tz: request.tz || 'UTC',
          groupBy,
        });
      } catch (error) {
        throw rpcErrorOf(error, this.logger, { rpc: 'UsageService.GetUsage', correlationId: requestId });
      }
    };
    return from(run());
  }
}
