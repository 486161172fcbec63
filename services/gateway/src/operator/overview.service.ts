import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import { Inject, Injectable } from '@nestjs/common';
import { ActivityProjection } from '../activity/activity.service.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { UsageReader, todayIn } from '../usage/usage-reader.js';
import type { Overview } from './overview.js';
import { DEAD_LETTER_COUNT_CAP } from './overview.js';

/**
 * The platform at a glance, for the HTTP and gRPC edges alike: tenants from the registry,
 * running turns and pending approvals from the activity projection, dead letters from the bus's
 * store, cost and tokens from the audit service's rollups across every tenant (today and this
 * month in the zone asked for).
 */
@Injectable()
export class OverviewService {
  constructor(
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(UsageReader) private readonly usage: UsageReader,
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
  ) {}

  /** The overview in `tz` (an IANA zone, checked by the caller: see overviewZone). */
  async overview(tz: string): Promise<Overview> {
    const { today, monthStart } = todayIn(tz);
    await this.directory.catchUp();
    const [turns, approvals, clientCalls, letters, month] = await Promise.all([
      this.activity.runningTurns(),
      this.activity.pendingApprovals(),
      this.activity.clientCallsPending(),
      this.infra.bus.deadLetters.list({ limit: DEAD_LETTER_COUNT_CAP }),
      this.usage.read({ tenantId: 'all-tenants', from: monthStart, to: today, tz, groupBy: GroupBy.DAY }),
    ]);
    const todayRow = month.rows.find((row) => row.key === today);
    return {
      tenants: this.directory.tenants().length,
      turnsRunning: turns.length,
      approvalsPending: approvals.length,
      clientCallsPending: clientCalls,
      deadLetters: letters.length,
      costTodayUsd: todayRow?.costUsd ?? 0,
      costMonthUsd: month.totals.costUsd,
      tokensToday: todayRow ? todayRow.promptTokens + todayRow.completionTokens : 0,
    };
  }
}
