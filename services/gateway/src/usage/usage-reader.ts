import type { UsageTotals } from '@keel/proto/keel/usage/v1/usage';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import { Inject, Injectable } from '@nestjs/common';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { AuditServiceClient } from './audit-service.client.js';

/** The figures of a usage total or row as the HTTP API returns them. */
export type UsageFigures = UsageTotals;

/** A usage answer as the HTTP API returns it (API.md "Usage and audit"). */
export interface UsageAnswer {
  totals: UsageFigures;
  /** Grouped by agent, each row also carries `feedbackUp` and `feedbackDown`. */
  rows: Array<UsageFigures & { key: string; feedbackUp?: number; feedbackDown?: number }>;
}

/** Which usage to read: one tenant, or every tenant read as one (the operator's view). */
export interface UsageRead {
  tenantId: string | 'all-tenants';
  from: string;
  to: string;
  tz: string;
  groupBy: GroupBy;
}

const figures = (f: Partial<UsageFigures> | undefined): UsageFigures => ({
  promptTokens: f?.promptTokens ?? 0,
  completionTokens: f?.completionTokens ?? 0,
  costUsd: f?.costUsd ?? 0,
  turns: f?.turns ?? 0,
});

/**
 * Reads usage from the audit service's rollups: one tenant, or every tenant the directory knows
 * summed in one call (the audit service answers each from its own documents). With no tenant at
 * all, the answer is zero without a call.
 */
@Injectable()
export class UsageReader {
  constructor(
    @Inject(AuditServiceClient) private readonly audit: AuditServiceClient,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
  ) {}

  async read(request: UsageRead): Promise<UsageAnswer> {
    const { tenantId, ...query } = request;
    let scope: { tenantId: string } | { tenantIds: string[] };
    if (tenantId === 'all-tenants') {
      await this.directory.catchUp();
      const tenantIds = this.directory.tenants().map((tenant) => tenant.id);
      if (tenantIds.length === 0) return { totals: figures(undefined), rows: [] };
      scope = { tenantIds };
    } else {
      scope = { tenantId };
    }
    const answer = await this.audit.getUsage({ tenantId: '', tenantIds: [], ...query, ...scope });
    return {
      totals: figures(answer.totals),
      rows: (answer.rows ?? []).map((row) => ({
        key: row.key,
        ...figures(row),
        ...(query.groupBy === GroupBy.AGENT
          ? { feedbackUp: Number(row.feedbackUp ?? 0), feedbackDown: Number(row.feedbackDown ?? 0) }
          : {}),
      })),
    };
  }

  /** Each tenant's cost from `from` to `to` (days in `tz`), by tenant id; tenants without usage are absent. */
  async costByTenant(from: string, to: string, tz = 'UTC'): Promise<Map<string, number>> {
    const answer = await this.read({ tenantId: 'all-tenants', from, to, tz, groupBy: GroupBy.TENANT });
    return new Map(answer.rows.map((row) => [row.key, row.costUsd]));
  }
}

/** Today (`YYYY-MM-DD`) in `tz` at `now`, and the first day of its month. */
export const todayIn = (tz: string, now = new Date()): { today: string; monthStart: string } => {
  const today = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(now);
  return { today, monthStart: `${today.slice(0, 8)}01` };
};
