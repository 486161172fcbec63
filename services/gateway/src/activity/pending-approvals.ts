import { NotFoundError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { fail } from '../config/request-fields.js';
import type { TenantDirectory } from '../tenants/tenant-directory.js';
import type { PendingApproval } from './activity.js';
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
): Promise<PendingApproval[]> => {
  if (caller.kind === 'tenant') {
    if (named !== undefined && named !== caller.tenantId)
      return fail('tenantId', 'tenantId is for the operator key: a tenant key reads its own tenant');
    return activity.pendingApprovals(caller.tenantId);
  }
  if (named !== undefined) {
    await directory.catchUp();
    if (!directory.tenant(named)) throw new NotFoundError(`tenant ${named} not found`);
  }
  return activity.pendingApprovals(named);
};
