import { Controller, Get, Inject, Query } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { PendingApproval, RunningTurn } from './activity.js';
import { ActivityProjection } from './activity.service.js';
import { pendingApprovalsFor, runningTurnsFor } from './pending-approvals.js';

/** A query parameter given at most once, as a string (undefined when absent). */
const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/**
 * API.md "Operator console": `GET /v1/approvals?status=pending` → the approvals waiting for a
 * decision, oldest first: a tenant admin's own tenant, the operator's every tenant (`?tenantId=`
 * narrows; unknown: 404). Answered from the activity projection, not by reading conversations.
 */
@Controller('v1/approvals')
@Roles('admin', 'operator')
export class ApprovalsController {
  constructor(
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  @Get()
  async list(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<{ data: PendingApproval[] }> {
    const status = single(query.status, 'status') ?? 'pending';
    if (status !== 'pending') return fail('status', `status must be pending, got ${JSON.stringify(status)}`);
    const named = single(query.tenantId, 'tenantId');
    return { data: await pendingApprovalsFor(caller, named, this.activity, this.directory) };
  }
}

/**
 * Keel addition (docs/API.md): `GET /v1/turns?status=running` → the turns started and not yet
 * ended (waiting for approval included), oldest first, scoped as `GET /v1/approvals`. The
 * console's live list starts from it, since the events feeds start at the head of the log.
 */
@Controller('v1/turns')
@Roles('admin', 'operator')
export class RunningTurnsController {
  constructor(
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  @Get()
  async list(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<{ data: RunningTurn[] }> {
    const status = single(query.status, 'status') ?? 'running';
    if (status !== 'running') return fail('status', `status must be running, got ${JSON.stringify(status)}`);
    const named = single(query.tenantId, 'tenantId');
    return { data: await runningTurnsFor(caller, named, this.activity, this.directory) };
  }
}
