// Usage shown two ways: a chart of tokens and cost per row, and the rows as a table with totals.
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
import type { GroupBy, UsageReport, UsageRow } from '../api/types';
import { formatCount, formatUsd } from './format';

/** Tokens (bars, left axis) and cost (line, right axis) per row. */
export const UsageChart = ({ rows, groupBy }: { rows: UsageRow[]; groupBy: GroupBy }) => (
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

/** The rows and their totals, as figures. */
export const UsageTable = ({ report, groupBy }: { report: UsageReport; groupBy: GroupBy }) => (
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
