import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller, metadataOf, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { parseIssueKey } from './tenant-requests.js';
import type { IssuedKey, KeyView } from './tenant-registry.service.js';
import { TenantRegistryService } from './tenant-registry.service.js';

/** The tenant of a tenant key (the admin role admits tenant keys only). */
const tenantOf = (caller: Principal): string => {
  if (caller.kind !== 'tenant') throw new Error('a tenant route reached without a tenant key');
  return caller.tenantId;
};

/**
 * API.md "Tenant keys (admin)": a tenant admin manages its own tenant's keys, as the operator
 * does for any tenant under `/v1/tenants/{tenantId}/keys`. Another tenant's key id is not found.
 */
@Controller('v1/keys')
@Roles('admin')
export class KeysController {
  constructor(@Inject(TenantRegistryService) private readonly registry: TenantRegistryService) {}

  /** `POST /v1/keys` `{ role, name? }` → 201 `{ id, role, key }`; the key is shown this once. */
  @Post()
  @HttpCode(201)
  issue(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<IssuedKey> {
    const { role, name } = parseIssueKey(body);
    return this.registry.issueKey(tenantOf(caller), role, name, metadataOf(caller, requestId));
  }

  /** `GET /v1/keys` → the tenant's working keys, without key or hash. */
  @Get()
  async list(@Caller() caller: Principal): Promise<{ data: KeyView[] }> {
    return { data: await this.registry.listKeys(tenantOf(caller)) };
  }

  /** `DELETE /v1/keys/{keyId}` → 204; the key stops working at once, on every gateway. */
  @Delete(':keyId')
  @HttpCode(204)
  async revoke(
    @Param('keyId') keyId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    await this.registry.revokeKey(tenantOf(caller), keyId, metadataOf(caller, requestId));
  }
}
