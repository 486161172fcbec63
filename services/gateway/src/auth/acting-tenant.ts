import { NotFoundError, PermissionDeniedError } from '@keel/core';
import type { TenantDirectory } from '../tenants/tenant-directory.js';
import type { Principal, RouteRole } from './principal.js';

/** The header with which the operator acts inside one tenant (API.md "acting for a tenant"). */
export const ACTING_TENANT_HEADER = 'x-keel-tenant';

/** Whether a route admits some tenant role (undefined: any key, e.g. `GET /v1/me`). */
const admitsTenantRoles = (roles: readonly RouteRole[] | undefined): boolean =>
  roles === undefined || roles.some((role) => role !== 'operator');

/**
 * The principal a request acts as, given its `X-Keel-Tenant` header.
 *
 * - No header: the key's own principal.
 * - The operator key: the tenant must exist (404 otherwise, on every route). On a route that
 *   admits tenant roles the operator then answers as that tenant's admin: key id `operator`, so
 *   every event it causes names the operator as its actor in the tenant's audit trail. An
 *   operator-only route (tenants, operator overview, dead letters) stays the operator's.
 * - A tenant key: its own tenant id is accepted (changes nothing); any other value is 403, the
 *   same whether that tenant exists or not, so the header reveals nothing and opens nothing.
 */
export const actingPrincipal = async (
  principal: Principal,
  header: string | undefined,
  roles: readonly RouteRole[] | undefined,
  directory: TenantDirectory,
): Promise<Principal> => {
  if (header === undefined) return principal;
  if (principal.kind === 'tenant') {
    if (header === principal.tenantId) return principal;
    throw new PermissionDeniedError(
      'X-Keel-Tenant is for the operator key: a tenant key acts in its own tenant',
    );
  }
  if (!directory.tenant(header)) await directory.catchUp();
  if (!directory.tenant(header)) throw new NotFoundError(`tenant ${header} not found`);
  if (!admitsTenantRoles(roles)) return principal;
  return {
    kind: 'tenant',
    tenantId: header,
    keyId: 'operator',
    role: 'admin',
    userId: principal.userId,
    actingOperator: true,
  };
};
