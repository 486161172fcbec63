// The platform at a glance: the operator's counters (GET /v1/operator/overview) or, for a tenant
// admin, its own tenant's, and the turns running now, live.
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useSession } from '../api/session';
import type { Overview as OverviewBody, TenantApproval, UsageReport } from '../api/types';
import { formatCount, formatUsd } from '../components/format';
import { PageTitle } from '../components/layout';
import { LiveTurns } from '../components/live-turns';
import { ErrorNote, Loading } from '../components/status';
import { TimeZonePicker, useTimeZone } from '../components/time-zone';
import { monthStart, todayIn } from './usage-range';

const Stat = ({ label, value, hint }: { label: string; value: string; hint?: string }) => (
  <div className="stat card">
    <span className="stat-label">{label}</span>
    <span className="stat-value">{value}</span>
    {hint && <span className="stat-hint">{hint}</span>}
  </div>
);

const OperatorStats = () => {
  const session = useSession();
  const [tz] = useTimeZone();
  const overview = useQuery({
    queryKey: ['live-summary', 'overview', session.key, tz],
    queryFn: () => session.call<OverviewBody>(`/v1/operator/overview?tz=${encodeURIComponent(tz)}`),
    placeholderData: keepPreviousData,
    refetchInterval: 5000,
  });
  if (overview.isPending) return <Loading what="the overview" />;
  if (overview.isError) return <ErrorNote error={overview.error} />;
  const o = overview.data;
  return (
    <div className="stats">
      <Stat label="Tenants" value={formatCount(o.tenants)} />
      <Stat label="Turns running" value={formatCount(o.turnsRunning)} />
      <Stat label="Approvals pending" value={formatCount(o.approvalsPending)} />
      <Stat label="Client calls pending" value={formatCount(o.clientCallsPending)} />
      <Stat label="Dead letters" value={formatCount(o.deadLetters)} />
      <Stat label="Cost today" value={formatUsd(o.costTodayUsd)} hint={tz} />
      <Stat label="Cost this month" value={formatUsd(o.costMonthUsd)} hint={tz} />
      <Stat label="Tokens today" value={formatCount(o.tokensToday)} hint={tz} />
    </div>
  );
};

const TenantStats = () => {
  const session = useSession();
  const [tz] = useTimeZone();
  const today = todayIn(tz);
  const usage = useQuery({
    queryKey: ['live-summary', 'month-usage', session.key, tz],
    queryFn: () =>
      session.call<UsageReport>(
        `/v1/usage?from=${monthStart(today)}&to=${today}&tz=${encodeURIComponent(tz)}&groupBy=day`,
      ),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  const approvals = useQuery({
    queryKey: ['live-summary', 'approvals', session.key],
    queryFn: () => session.call<{ data: TenantApproval[] }>('/v1/approvals?status=pending'),
    refetchInterval: 5000,
  });
  const todayRow = usage.data?.rows.find((row) => row.key === today);
  return (
    <>
      {usage.isError && <ErrorNote error={usage.error} prefix="Usage" />}
      {approvals.isError && <ErrorNote error={approvals.error} prefix="Approvals" />}
      <div className="stats">
        <Stat label="Tenant" value={session.me.tenant?.name ?? '—'} />
        <Stat
          label="Approvals pending"
          value={approvals.data ? formatCount(approvals.data.data.length) : '…'}
        />
        <Stat label="Cost today" value={usage.data ? formatUsd(todayRow?.costUsd ?? 0) : '…'} hint={tz} />
        <Stat
          label="Cost this month"
          value={usage.data ? formatUsd(usage.data.totals.costUsd ?? 0) : '…'}
          hint={tz}
        />
        <Stat label="Turns this month" value={usage.data ? formatCount(usage.data.totals.turns ?? 0) : '…'} />
      </div>
    </>
  );
};

/** The Overview page: counters and the live turns. */
export const Overview = () => {
  const session = useSession();
  return (
    <>
      <PageTitle title="Overview" />
      <section className="card controls" aria-label="Overview settings">
        <TimeZonePicker />
        <span className="muted small">Today and this month are calendar days in this zone.</span>
      </section>
      {session.isOperator ? <OperatorStats /> : <TenantStats />}
      <LiveTurns feedPath={session.isOperator ? '/v1/operator/events' : '/v1/events'} />
    </>
  );
};
