import { NotFoundError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { fail } from '../config/request-fields.js';
import type { TenantDirectory } from '../tenants/tenant-directory.js';
import type { PendingApproval, RunningTurn } from './activity.js';
import type { ActivityProjection } from './activity.service.js';

/**
 * The pending approvals a caller may see: a tenant key (or the operator acting for a tenant) its
 * own tenant's, naming no other (400 `tenantId`); the operator every tenant's, or the one it
 * names (404 when unknown). HTTP and gRPC answer with this.
 */
export const pendingApprovalsFor = async (
  caller: Principal,
  named: string | undefined,
  activity: ActivityProjection,
  directory: TenantDirectory,
): Promise<PendingApproval[]> => activity.pendingApprovals(await activityScope(caller, named, directory));

/** The running turns a caller may see, scoped as pendingApprovalsFor. */
export const runningTurnsFor = async (
  caller: Principal,
  named: string | undefined,
  activity: ActivityProjection,
  directory: TenantDirectory,
): Promise<RunningTurn[]> => activity.runningTurns(await activityScope(caller, named, directory));

/** The tenant an activity read is about (undefined: every tenant, operator only). */
const activityScope = async (
  caller: Principal,
  named: string | undefined,
  directory: TenantDirectory,
): Promise<string | undefined> => {
  if (caller.kind === 'tenant') {
    if (named !== undefined && named !== caller.tenantId)
      return fail('tenantId', 'tenantId is for the operator key: a tenant key reads its own tenant');
    return caller.tenantId;
  }
  if (named !== undefined) {
    await directory.catchUp();
    if (!directory.tenant(named)) throw new NotFoundError(`tenant ${named} not found`);
  }
  return named;
};
