import { Controller, Get, Inject } from '@nestjs/common';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { Principal, RouteRole } from './principal.js';
import { Caller } from './principal.js';

/** The answer of `GET /v1/me`. */
export interface MeView {
  keyId: string;
  role: RouteRole;
  tenant: { id: string; name: string } | null;
}

/**
 * API.md "Who am I": `GET /v1/me` (any key) → the key's id, role and tenant (null for the
 * operator). The operator acting for a tenant (`X-Keel-Tenant`) is still the operator, with that
 * tenant as its tenant, so a console can show whom it acts for.
 */
@Controller('v1/me')
export class MeController {
  constructor(@Inject(TenantDirectory) private readonly directory: TenantDirectory) {}

  @Get()
  me(@Caller() caller: Principal): MeView {
    if (caller.kind === 'operator') return { keyId: caller.keyId, role: 'operator', tenant: null };
    const tenant = this.directory.tenant(caller.tenantId);
    return {
      keyId: caller.keyId,
      role: caller.actingOperator ? 'operator' : caller.role,
      tenant: { id: caller.tenantId, name: tenant?.name ?? '' },
    };
  }
}
