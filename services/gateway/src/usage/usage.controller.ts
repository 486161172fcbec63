import { Controller, Get, Inject, Query } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import type { UsageTotals } from '@keel/proto/keel/usage/v1/usage';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import { AuditServiceClient } from './audit-service.client.js';
import { tenantOfRequest } from './tenant-of-request.js';

const GROUP_BY: Record<string, GroupBy> = {
  day: GroupBy.DAY,
  model: GroupBy.MODEL,
  user: GroupBy.USER,
};

/** The figures of a usage total or row as the HTTP API returns them. */
type UsageFigures = UsageTotals;

/** A query parameter given at most once, as a string (undefined when absent). */
const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

const figures = (f: Partial<UsageFigures> | undefined): UsageFigures => ({
  promptTokens: f?.promptTokens ?? 0,
  completionTokens: f?.completionTokens ?? 0,
  costUsd: f?.costUsd ?? 0,
  turns: f?.turns ?? 0,
});

/** API.md "Usage and audit": `GET /v1/usage`, answered by the audit service's rollups. */
@Controller('v1/usage')
@Roles('viewer', 'operator')
export class UsageController {
  constructor(
    @Inject(AuditServiceClient) private readonly audit: AuditServiceClient,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  /**
   * `GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD&tz=Area/City&groupBy=day|model|user` (operator:
   * `&tenantId=`) → `{ totals, rows: [{ key, promptTokens, completionTokens, costUsd, turns }] }`.
   * Days are calendar days in `tz` (default UTC). A bad date, zone, range or grouping: 400 naming it.
   */
  @Get()
  async usage(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<{ totals: UsageFigures; rows: Array<UsageFigures & { key: string }> }> {
    const from = single(query.from, 'from') ?? fail('from', 'from is required (YYYY-MM-DD)');
    const to = single(query.to, 'to') ?? fail('to', 'to is required (YYYY-MM-DD)');
    const tz = single(query.tz, 'tz') ?? 'UTC';
    const groupByName = single(query.groupBy, 'groupBy') ?? 'day';
    const groupBy = Object.hasOwn(GROUP_BY, groupByName) ? GROUP_BY[groupByName] : undefined;
    if (groupBy === undefined)
      return fail('groupBy', `groupBy must be day, model or user, got ${JSON.stringify(groupByName)}`);
    const tenantId = await tenantOfRequest(caller, query.tenantId, this.directory);
    const answer = await this.audit.getUsage({ tenantId, from, to, tz: tz || 'UTC', groupBy });
    return {
      totals: figures(answer.totals),
      rows: (answer.rows ?? []).map((row) => ({ key: row.key, ...figures(row) })),
    };
  }
}
