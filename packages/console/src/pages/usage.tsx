// Usage as charts by day, model, user and agent (and tenant, for the operator across tenants) in a
// chosen time zone, from GET /v1/usage, and the same rows as CSV (format=csv) to download.
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useSession } from '../api/session';
import type { GroupBy, UsageReport, UsageRow } from '../api/types';
import { formatCount, formatUsd } from '../components/format';
import { PageTitle } from '../components/layout';
import { UsageChart, UsageTable } from '../components/usage-views';
import { ErrorNote, Loading } from '../components/status';
import { useTenants } from '../components/tenant-picker';
import { TimeZonePicker, useTimeZone } from '../components/time-zone';
import { addDays, todayIn } from './usage-range';

const GROUPS: GroupBy[] = ['day', 'model', 'user', 'agent'];
const DAYS_SHOWN = 30;

/** Every day of the range, the days without usage at zero (a day chart reads as a calendar). */
const everyDay = (rows: UsageRow[], from: string, to: string): UsageRow[] => {
  const byDay = new Map(rows.map((row) => [row.key, row]));
  const days: UsageRow[] = [];
  for (let day = from; day <= to && days.length < 366; day = addDays(day, 1)) {
    days.push(byDay.get(day) ?? { key: day, promptTokens: 0, completionTokens: 0, costUsd: 0, turns: 0 });
  }
  return days;
};

/** Saves `blob` as a file named `name` (an object URL; the key never goes in a URL). */
const saveFile = (blob: Blob, name: string) => {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
};

/** What the page shows: scope (operator: '' for every tenant), time zone, range and grouping. */
interface UsageFilter {
  scope: string;
  tz: string;
  from: string;
  to: string;
  groupBy: GroupBy;
}

/** The filter, its setters and the query string GET /v1/usage takes for it. */
const useUsageFilter = () => {
  const session = useSession();
  const [tz] = useTimeZone();
  const [groupBy, setGroupBy] = useState<GroupBy>('day');
  const [scope, setScope] = useState<string>(session.isOperator ? (session.tenantId ?? '') : '');
  // The last 30 days in the zone, until a date is picked.
  const [custom, setCustom] = useState<{ from: string; to: string } | undefined>();
  const to = custom?.to ?? todayIn(tz);
  const from = custom?.from ?? addDays(to, -(DAYS_SHOWN - 1));
  const filter: UsageFilter = { scope, tz, from, to, groupBy };
  const params = new URLSearchParams({ from, to, tz, groupBy });
  if (session.isOperator && scope !== '') params.set('tenantId', scope);
  const set = {
    groupBy: setGroupBy,
    range: setCustom,
    scope: (value: string) => {
      setScope(value);
      if (value !== '' && groupBy === 'tenant') setGroupBy('day');
    },
  };
  return { filter, set, query: params.toString() };
};

type FilterSetters = ReturnType<typeof useUsageFilter>['set'];

const UsageFilters = ({
  filter,
  set,
  onDownload,
  downloading,
}: {
  filter: UsageFilter;
  set: FilterSetters;
  onDownload: () => void;
  downloading: boolean;
}) => {
  const session = useSession();
  const tenants = useTenants();
  const groups: GroupBy[] = session.isOperator && filter.scope === '' ? [...GROUPS, 'tenant'] : GROUPS;
  return (
    <section className="card controls" aria-label="Usage filters">
      {session.isOperator && (
        <label className="field">
          <span>Tenants</span>
          <select value={filter.scope} onChange={(event) => set.scope(event.target.value)}>
            <option value="">All tenants</option>
            {(tenants.data ?? []).map((tenant) => (
              <option key={tenant.id} value={tenant.id}>
                {tenant.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <TimeZonePicker />
      <label className="field">
        <span>From</span>
        <input
          type="date"
          value={filter.from}
          onChange={(event) => set.range({ from: event.target.value, to: filter.to })}
        />
      </label>
      <label className="field">
        <span>To</span>
        <input
          type="date"
          value={filter.to}
          onChange={(event) => set.range({ from: filter.from, to: event.target.value })}
        />
      </label>
      <div className="segmented" role="group" aria-label="Group by">
        {groups.map((group) => (
          <button
            key={group}
            type="button"
            className={group === filter.groupBy ? 'active' : ''}
            aria-pressed={group === filter.groupBy}
            onClick={() => set.groupBy(group)}
          >
            By {group}
          </button>
        ))}
      </div>
      <button type="button" onClick={onDownload} disabled={downloading}>
        Download CSV
      </button>
    </section>
  );
};

const UsageResult = ({
  report,
  filter,
  refreshing,
}: {
  report: UsageReport;
  filter: UsageFilter;
  refreshing: boolean;
}) => (
  <section className={`card${refreshing ? ' refreshing' : ''}`}>
    <h2>
      {formatUsd(report.totals.costUsd)} · {formatCount(report.totals.turns)} turns
      <span className="muted small">
        {' '}
        {filter.from} – {filter.to}, {filter.tz}
      </span>
    </h2>
    {report.rows.length === 0 ? (
      <p className="muted">No usage in this range.</p>
    ) : (
      <>
        <UsageChart
          rows={filter.groupBy === 'day' ? everyDay(report.rows, filter.from, filter.to) : report.rows}
          groupBy={filter.groupBy}
        />
        <UsageTable report={report} groupBy={filter.groupBy} />
      </>
    )}
  </section>
);

/** The Usage page. */
export const Usage = () => {
  const session = useSession();
  const { filter, set, query } = useUsageFilter();
  const usage = useQuery({
    queryKey: ['usage', session.key, query],
    queryFn: () => session.call<UsageReport>(`/v1/usage?${query}`),
    placeholderData: keepPreviousData,
  });
  const download = useMutation({
    mutationFn: async () => {
      const response = await session.fetchRaw(`/v1/usage?${query}&format=csv`, { accept: 'text/csv' });
      const zone = filter.tz.replace(/\//g, '_');
      saveFile(await response.blob(), `keel-usage-${filter.groupBy}-${filter.from}-${filter.to}-${zone}.csv`);
    },
  });
  return (
    <>
      <PageTitle title="Usage" />
      <UsageFilters
        filter={filter}
        set={set}
        onDownload={() => download.mutate()}
        downloading={download.isPending}
      />
      {download.isError && <ErrorNote error={download.error} prefix="CSV" />}
      {usage.isPending && <Loading what="usage" />}
      {usage.isError && <ErrorNote error={usage.error} />}
      {usage.data && <UsageResult report={usage.data} filter={filter} refreshing={usage.isFetching} />}
    </>
  );
};
