import { UnavailableError } from '@keel/core';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller, metadataOf, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { UsageReader, todayIn } from '../usage/usage-reader.js';
import { parseCreateTenant, parseIssueKey, parseSetBudget } from './tenant-requests.js';
import type { IssuedKey, KeyView, TenantView } from './tenant-registry.service.js';
import { TenantRegistryService } from './tenant-registry.service.js';

/** A row of `GET /v1/tenants`. */
export interface TenantRow extends Omit<TenantView, 'monthlyUsd'> {
  monthlyUsd: number | null;
  costMonthUsd: number | null;
}

/** The operator routes of API.md: tenants, their keys and budgets. */
@Controller('v1/tenants')
@Roles('operator')
export class TenantsController {
  constructor(
    @Inject(TenantRegistryService) private readonly registry: TenantRegistryService,
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  /** `POST /v1/tenants` → 201 the tenant. */
  @Post()
  @HttpCode(201)
  create(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<TenantView> {
    const { name } = parseCreateTenant(body);
    return this.registry.createTenant(name, metadataOf(caller, requestId));
  }

  /**
   * `GET /v1/tenants` → every tenant with its budget (`monthlyUsd`, null when none) and its cost
   * this calendar month in UTC (`costMonthUsd`, from the audit service's rollups; null while the
   * audit service cannot be reached, so the list still answers).
   */
  @Get()
  async list(): Promise<{ data: TenantRow[] }> {
    const tenants = await this.registry.listTenants();
    const { today, monthStart } = todayIn('UTC');
    let costs: Map<string, number> | undefined = new Map();
    try {
      if (tenants.length > 0) costs = await this.usage.costByTenant(monthStart, today);
    } catch (error) {
      // The tenants are the registry's; only their cost needs the audit service.
      if (!(error instanceof UnavailableError)) throw error;
      this.logger.warn({ err: error }, 'tenant costs unavailable: the audit service cannot be reached');
      costs = undefined;
    }
    return {
      data: tenants.map((tenant) => ({
        ...tenant,
        monthlyUsd: tenant.monthlyUsd ?? null,
        costMonthUsd: costs ? (costs.get(tenant.id) ?? 0) : null,
      })),
    };
  }

  /** `POST /v1/tenants/{tenantId}/keys` → 201 `{ id, role, key }`; the key is shown this once. */
  @Post(':tenantId/keys')
  @HttpCode(201)
  issueKey(
    @Param('tenantId') tenantId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<IssuedKey> {
    const { role, name } = parseIssueKey(body);
    return this.registry.issueKey(tenantId, role, name, metadataOf(caller, requestId));
  }

  /** `GET /v1/tenants/{tenantId}/keys` → the tenant's working keys, as `GET /v1/keys` shows them. */
  @Get(':tenantId/keys')
  async listKeys(@Param('tenantId') tenantId: string): Promise<{ data: KeyView[] }> {
    return { data: await this.registry.listKeys(tenantId) };
  }

  /** `DELETE /v1/tenants/{tenantId}/keys/{keyId}` → 204; the key stops working at once. */
  @Delete(':tenantId/keys/:keyId')
  @HttpCode(204)
  async revokeKey(
    @Param('tenantId') tenantId: string,
    @Param('keyId') keyId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    await this.registry.revokeKey(tenantId, keyId, metadataOf(caller, requestId));
  }

  /** `PUT /v1/tenants/{tenantId}/budget` `{ monthlyUsd }` → 200 the tenant with its budget. */
  @Put(':tenantId/budget')
  setBudget(
    @Param('tenantId') tenantId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<TenantView> {
    const { monthlyUsd } = parseSetBudget(body);
    return this.registry.setBudget(tenantId, monthlyUsd, metadataOf(caller, requestId));
  }
}
