// Usage as charts by day, model, user and agent (and tenant, for the operator across tenants) in a
// chosen time zone, from GET /v1/usage, and the same rows as CSV (format=csv) to download.
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import {
  Bar,
  CartesianGrid,
  ComposedChart,
  Legend,
  Line,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import { useSession } from '../api/session';
import type { GroupBy, UsageReport, UsageRow } from '../api/types';
import { formatCount, formatUsd } from '../components/format';
import { PageTitle } from '../components/layout';
import { ErrorNote, Loading } from '../components/status';
import { useTenants } from '../components/tenant-picker';
import { addDays, timeZones, todayIn } from './usage-range';

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

const UsageChart = ({ rows, groupBy }: { rows: UsageRow[]; groupBy: GroupBy }) => (
  <div className="chart" data-testid="usage-chart" aria-label={`Usage by ${groupBy}`}>
    <ResponsiveContainer width="100%" height={300}>
      <ComposedChart data={rows} margin={{ top: 8, right: 8, bottom: 8, left: 8 }}>
        <CartesianGrid strokeDasharray="3 3" stroke="#e3e8ef" />
        <XAxis
          dataKey="key"
          tick={{ fontSize: 12 }}
          tickFormatter={(key: string) => (groupBy === 'day' ? key.slice(5) : key)}
        />
        <YAxis
          yAxisId="tokens"
          tick={{ fontSize: 12 }}
          tickFormatter={(value: number) => formatCount(value)}
        />
        <YAxis
          yAxisId="cost"
          orientation="right"
          tick={{ fontSize: 12 }}
          tickFormatter={(value: number) => `$${value}`}
        />
        <Tooltip
          formatter={(value, name) =>
            name === 'Cost' ? formatUsd(Number(value)) : formatCount(Number(value))
          }
        />
        <Legend />
        <Bar
          yAxisId="tokens"
          dataKey="promptTokens"
          name="Prompt tokens"
          stackId="tokens"
          fill="#5b7cfa"
          isAnimationActive={false}
        />
        <Bar
          yAxisId="tokens"
          dataKey="completionTokens"
          name="Completion tokens"
          stackId="tokens"
          fill="#9db1ff"
          isAnimationActive={false}
        />
        <Line
          yAxisId="cost"
          dataKey="costUsd"
          name="Cost"
          stroke="#e8590c"
          strokeWidth={2}
          dot={groupBy !== 'day'}
          isAnimationActive={false}
        />
      </ComposedChart>
    </ResponsiveContainer>
  </div>
);

const UsageTable = ({ report, groupBy }: { report: UsageReport; groupBy: GroupBy }) => (
  <div className="table-wrap">
    <table className="usage-table" aria-label="Usage rows">
      <thead>
        <tr>
          <th>{groupBy}</th>
          <th className="num">Prompt tokens</th>
          <th className="num">Completion tokens</th>
          <th className="num">Cost</th>
          <th className="num">Turns</th>
        </tr>
      </thead>
      <tbody>
        {report.rows.map((row) => (
          <tr key={row.key}>
            <td>{row.key}</td>
            <td className="num">{formatCount(row.promptTokens)}</td>
            <td className="num">{formatCount(row.completionTokens)}</td>
            <td className="num">{formatUsd(row.costUsd)}</td>
            <td className="num">{formatCount(row.turns)}</td>
          </tr>
        ))}
      </tbody>
      <tfoot>
        <tr>
          <th>Total</th>
          <th className="num">{formatCount(report.totals.promptTokens)}</th>
          <th className="num">{formatCount(report.totals.completionTokens)}</th>
          <th className="num">{formatUsd(report.totals.costUsd)}</th>
          <th className="num">{formatCount(report.totals.turns)}</th>
        </tr>
      </tfoot>
    </table>
  </div>
);

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

/** The Usage page. */
export const Usage = () => {
  const session = useSession();
  const tenants = useTenants();
  const [tz, setTz] = useState('UTC');
  const [groupBy, setGroupBy] = useState<GroupBy>('day');
  const [scope, setScope] = useState<string>(session.isOperator ? (session.tenantId ?? '') : '');
  const [custom, setCustom] = useState<{ from: string; to: string } | undefined>();
  const to = custom?.to ?? todayIn(tz);
  const from = custom?.from ?? addDays(to, -(DAYS_SHOWN - 1));
  const params = new URLSearchParams({ from, to, tz, groupBy });
  if (session.isOperator && scope !== '') params.set('tenantId', scope);
  const query = params.toString();

  const usage = useQuery({
    queryKey: ['usage', session.key, query],
    queryFn: () => session.call<UsageReport>(`/v1/usage?${query}`),
    placeholderData: keepPreviousData,
  });
  const download = useMutation({
    mutationFn: async () => {
      const response = await session.fetchRaw(`/v1/usage?${query}&format=csv`, { accept: 'text/csv' });
      saveFile(await response.blob(), `keel-usage-${groupBy}-${from}-${to}-${tz.replace(/\//g, '_')}.csv`);
    },
  });
  const groups: GroupBy[] = session.isOperator && scope === '' ? [...GROUPS, 'tenant'] : GROUPS;
  const chartRows = usage.data
    ? groupBy === 'day'
      ? everyDay(usage.data.rows, from, to)
      : usage.data.rows
    : [];

  return (
    <>
      <PageTitle title="Usage" />
      <section className="card controls" aria-label="Usage filters">
        {session.isOperator && (
          <label className="field">
            <span>Tenants</span>
            <select
              value={scope}
              onChange={(event) => {
                setScope(event.target.value);
                if (event.target.value !== '' && groupBy === 'tenant') setGroupBy('day');
              }}
            >
              <option value="">All tenants</option>
              {(tenants.data ?? []).map((tenant) => (
                <option key={tenant.id} value={tenant.id}>
                  {tenant.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="field">
          <span>Time zone</span>
          <select value={tz} onChange={(event) => setTz(event.target.value)}>
            {timeZones().map((zone) => (
              <option key={zone} value={zone}>
                {zone}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>From</span>
          <input type="date" value={from} onChange={(event) => setCustom({ from: event.target.value, to })} />
        </label>
        <label className="field">
          <span>To</span>
          <input type="date" value={to} onChange={(event) => setCustom({ from, to: event.target.value })} />
        </label>
        <div className="segmented" role="group" aria-label="Group by">
          {groups.map((group) => (
            <button
              key={group}
              type="button"
              className={group === groupBy ? 'active' : ''}
              aria-pressed={group === groupBy}
              onClick={() => setGroupBy(group)}
            >
              By {group}
            </button>
          ))}
        </div>
        <button type="button" onClick={() => download.mutate()} disabled={download.isPending}>
          Download CSV
        </button>
      </section>
      {download.isError && <ErrorNote error={download.error} prefix="CSV" />}
      {usage.isPending && <Loading what="usage" />}
      {usage.isError && <ErrorNote error={usage.error} />}
      {usage.data && (
        <section className={`card${usage.isFetching ? ' refreshing' : ''}`}>
          <h2>
            {formatUsd(usage.data.totals.costUsd)} · {formatCount(usage.data.totals.turns)} turns
            <span className="muted small">
              {' '}
              {from} – {to}, {tz}
            </span>
          </h2>
          {usage.data.rows.length === 0 ? (
            <p className="muted">No usage in this range.</p>
          ) : (
            <>
              <UsageChart rows={chartRows} groupBy={groupBy} />
              <UsageTable report={usage.data} groupBy={groupBy} />
            </>
          )}
        </section>
      )}
    </>
  );
};
