import { Controller, Get, Inject, Query, Res } from '@nestjs/common';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { usageCsv } from './usage-csv.js';
import type { UsageAnswer } from './usage-reader.js';
import { UsageReader } from './usage-reader.js';
import { tenantOfRequest } from './tenant-of-request.js';

const GROUP_BY: Record<string, GroupBy> = {
  day: GroupBy.DAY,
  model: GroupBy.MODEL,
  user: GroupBy.USER,
  agent: GroupBy.AGENT,
  tenant: GroupBy.TENANT,
};

/** The part of Fastify's reply a CSV answer sets. */
interface CsvReply {
  header(name: string, value: string): unknown;
}

/** A query parameter given at most once, as a string (undefined when absent). */
const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** API.md "Usage and audit": `GET /v1/usage`, answered by the audit service's rollups. */
@Controller('v1/usage')
@Roles('viewer', 'operator')
export class UsageController {
  constructor(
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  /**
   * `GET /v1/usage?from=YYYY-MM-DD&to=YYYY-MM-DD&tz=Area/City&groupBy=day|model|user|agent`
   * (operator: `&tenantId=`, or none for every tenant read as one, and `groupBy=tenant`;
   * `&format=json|csv`) → `{ totals, rows: [{ key, promptTokens, completionTokens, costUsd, turns }] }`,
   * or the same rows as `text/csv`. Days are calendar days in `tz` (default UTC). A bad date,
   * zone, range, grouping or format: 400 naming it.
   */
  @Get()
  async read(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
    @Res({ passthrough: true }) reply: CsvReply,
  ): Promise<UsageAnswer | string> {
    const from = single(query.from, 'from') ?? fail('from', 'from is required (YYYY-MM-DD)');
    const to = single(query.to, 'to') ?? fail('to', 'to is required (YYYY-MM-DD)');
    const tz = single(query.tz, 'tz') || 'UTC';
    const format = single(query.format, 'format') ?? 'json';
    if (format !== 'json' && format !== 'csv')
      return fail('format', `format must be json or csv, got ${JSON.stringify(format)}`);
    const groupByName = single(query.groupBy, 'groupBy') ?? 'day';
    const groupBy = Object.hasOwn(GROUP_BY, groupByName) ? GROUP_BY[groupByName] : undefined;
    const operator = caller.kind === 'operator';
    if (groupBy === undefined || (groupBy === GroupBy.TENANT && !operator)) {
      const names = operator ? 'day, model, user, agent or tenant' : 'day, model, user or agent';
      return fail('groupBy', `groupBy must be ${names}, got ${JSON.stringify(groupByName)}`);
    }
    const tenantId =
      operator && query.tenantId === undefined
        ? 'all-tenants'
        : await tenantOfRequest(caller, query.tenantId, this.directory);
    const answer = await this.usage.read({ tenantId, from, to, tz, groupBy });
    if (format === 'json') return answer;
    reply.header('content-type', 'text/csv; charset=utf-8');
    reply.header('content-disposition', `attachment; filename="usage-${from}-${to}.csv"`);
    return usageCsv(answer);
  }
}
