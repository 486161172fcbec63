import { NotFoundError } from '@keel/core';
import type { Principal } from '../auth/principal.js';
import { fail } from '../config/request-fields.js';
import type { TenantDirectory } from '../tenants/tenant-directory.js';

/**
 * The tenant a usage or audit read is about: a tenant key reads its own and may not name one
 * (400 `tenantId`); the operator must name one (400 when absent), and an unknown one is 404.
 */
export const tenantOfRequest = async (
  caller: Principal,
  tenantId: unknown,
  directory: TenantDirectory,
): Promise<string> => {
  if (tenantId !== undefined && typeof tenantId !== 'string')
    return fail('tenantId', 'tenantId must be given once');
  if (caller.kind === 'tenant') {
    // The operator acting for a tenant (X-Keel-Tenant) may still name that same tenant.
    if (tenantId !== undefined && !(caller.actingOperator && tenantId === caller.tenantId)) {
      return fail('tenantId', 'tenantId is for the operator key only: a tenant key reads its own tenant');
    }
    return caller.tenantId;
  }
  if (!tenantId) return fail('tenantId', 'tenantId is required with the operator key');
  if (!directory.tenant(tenantId)) await directory.catchUp();
  if (!directory.tenant(tenantId)) throw new NotFoundError(`tenant ${tenantId} not found`);
  return tenantId;
};
