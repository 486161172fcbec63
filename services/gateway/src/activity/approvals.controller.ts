import { Controller, Get, Inject, Query } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { PendingApproval } from './activity.js';
import { ActivityProjection } from './activity.service.js';
import { pendingApprovalsFor } from './pending-approvals.js';

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
