import type { Metadata } from '@grpc/grpc-js';
import type {
  GetOverviewRequest,
  ListPendingApprovalsRequest,
  ListPendingApprovalsResponse,
  GetOverviewResponse,
} from '@keel/proto/keel/operator/v1/operator';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { Observable } from 'rxjs';
import { from } from 'rxjs';
import { ActivityProjection } from '../activity/activity.service.js';
import { pendingApprovalsFor } from '../activity/pending-approvals.js';
import type { RouteRole } from '../auth/principal.js';
import type { GrpcCaller, HeaderSink } from '../grpc/grpc-caller.js';
import { GrpcCallerResolver } from '../grpc/grpc-caller.js';
import { rpcErrorOf } from '../grpc/rpc-error.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { overviewZone } from './overview.js';
import { OverviewService } from './overview.service.js';

const SERVICE = 'keel.operator.v1.OperatorService';
const OPERATOR: readonly RouteRole[] = ['operator'];
const ADMINS: readonly RouteRole[] = ['admin', 'operator'];

/**
 * keel.operator.v1.OperatorService on the gateway's gRPC server: the overview and the pending
 * approvals as `GET /v1/operator/overview` and `GET /v1/approvals` answer them, after the same
 * authentication, roles (and `x-keel-tenant`) and rate limit as every gateway call.
 */
@Controller()
export class OperatorGrpcController {
  constructor(
    @Inject(GrpcCallerResolver) private readonly callers: GrpcCallerResolver,
    @Inject(OverviewService) private readonly overviews: OverviewService,
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  @GrpcMethod(SERVICE, 'GetOverview')
  getOverview(
    request: GetOverviewRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<GetOverviewResponse> {
    return this.answer('GetOverview', OPERATOR, metadata, call, () =>
      this.overviews.overview(overviewZone(request.tz || undefined)),
    );
  }

  @GrpcMethod(SERVICE, 'ListPendingApprovals')
  listPendingApprovals(
    request: ListPendingApprovalsRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<ListPendingApprovalsResponse> {
    return this.answer('ListPendingApprovals', ADMINS, metadata, call, async (caller) => {
      const approvals = await pendingApprovalsFor(
        caller.principal,
        request.tenantId || undefined,
        this.activity,
        this.directory,
      );
      return {
        data: approvals.map(({ args, message, ...approval }) => ({
          ...approval,
          argsJson: JSON.stringify(args ?? {}),
          message: message ?? '',
        })),
      };
    });
  }

  private answer<T>(
    rpc: string,
    roles: readonly RouteRole[],
    metadata: Metadata | undefined,
    call: HeaderSink | undefined,
    run: (caller: GrpcCaller) => Promise<T>,
  ): Observable<T> {
    let requestId: string | undefined;
    const handle = async (): Promise<T> => {
      try {
        const caller = await this.callers.resolve(metadata, roles, rpc, call ? { call } : {});
        requestId = caller.requestId;
        return await run(caller);
      } catch (error) {
        throw rpcErrorOf(error, this.logger, { rpc: `OperatorService.${rpc}`, correlationId: requestId });
      }
    };
    return from(handle());
  }
}
