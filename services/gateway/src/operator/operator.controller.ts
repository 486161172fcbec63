import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import { Controller, Get, Inject, Query } from '@nestjs/common';
import { ActivityProjection } from '../activity/activity.service.js';
import { Roles } from '../auth/roles.decorator.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { UsageReader, todayIn } from '../usage/usage-reader.js';
import type { Overview } from './overview.js';
import { DEAD_LETTER_COUNT_CAP, overviewZone } from './overview.js';

/**
 * API.md "Operator console": `GET /v1/operator/overview?tz=` (operator) → the platform at a
 * glance. Tenants from the registry, running turns and pending approvals from the activity
 * projection, dead letters from the bus's store, cost and tokens from the audit service's
 * rollups across every tenant (today and this month in `tz`, default UTC).
 */
@Controller('v1/operator')
@Roles('operator')
export class OperatorController {
  constructor(
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
  ) {}

  @Get('overview')
  async overview(@Query('tz') tzParam: unknown): Promise<Overview> {
    const tz = overviewZone(tzParam);
    const { today, monthStart } = todayIn(tz);
    await this.directory.catchUp();
    const [turns, approvals, letters, month] = await Promise.all([
      this.activity.runningTurns(),
      this.activity.pendingApprovals(),
      this.infra.bus.deadLetters.list({ limit: DEAD_LETTER_COUNT_CAP }),
      this.usage.read({ tenantId: 'all-tenants', from: monthStart, to: today, tz, groupBy: GroupBy.DAY }),
    ]);
    const todayRow = month.rows.find((row) => row.key === today);
    return {
      tenants: this.directory.tenants().length,
      turnsRunning: turns.length,
      approvalsPending: approvals.length,
      clientCallsPending: 0,
      deadLetters: letters.length,
      costTodayUsd: todayRow?.costUsd ?? 0,
      costMonthUsd: month.totals.costUsd,
      tokensToday: todayRow ? todayRow.promptTokens + todayRow.completionTokens : 0,
    };
  }
}
