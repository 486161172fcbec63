import type { RollupReader, UsageAnswer, UsageRow } from './usage-query.js';
import { answerUsage } from './usage-query.js';
import type { UsageAcrossGroupBy, UsageQuery } from './usage-request.js';
import type { UsageFigures } from './usage-totals.js';
import { nanoUsd } from './usage-totals.js';

/** Most tenants one query may read as one. */
export const MAX_TENANTS_PER_QUERY = 1000;

/** Tenants answered at once (each reads its month documents). */
const CONCURRENCY = 8;

/** Prompt, completion, nano-USD, turns, feedback up, feedback down. */
type Sum = [number, number, number, number, number, number];

const add = (sum: Sum, f: UsageFigures & { feedbackUp?: number; feedbackDown?: number }): Sum => {
  sum[0] += f.promptTokens;
  sum[1] += f.completionTokens;
  sum[2] += nanoUsd(f.costUsd);
  sum[3] += f.turns;
  sum[4] += f.feedbackUp ?? 0;
  sum[5] += f.feedbackDown ?? 0;
  return sum;
};

const figures = (sum: Sum): UsageFigures => ({
  promptTokens: sum[0],
  completionTokens: sum[1],
  costUsd: sum[2] / 1e9,
  turns: sum[3],
});

const used = (f: UsageFigures): boolean =>
  f.promptTokens > 0 || f.completionTokens > 0 || f.costUsd > 0 || f.turns > 0;

/**
 * Answers one query over several tenants read as one (the operator's usage across tenants):
 * each tenant is answered from its own rollups, then totals and rows are summed (cost in
 * nano-dollars, so the sum is exact whatever the order). `tenant` keys one row per tenant with
 * usage in the range, in ascending id order; any other grouping merges the tenants' rows by key.
 */
export const answerUsageAcross = async (
  reader: RollupReader,
  tenantIds: readonly string[],
  query: Omit<UsageQuery, 'tenantId' | 'groupBy'> & { groupBy: UsageAcrossGroupBy },
): Promise<UsageAnswer> => {
  const groupBy = query.groupBy === 'tenant' ? 'day' : query.groupBy;
  const answers: Array<[string, UsageAnswer]> = [];
  for (let i = 0; i < tenantIds.length; i += CONCURRENCY) {
    const batch = tenantIds.slice(i, i + CONCURRENCY);
    const done = await Promise.all(
      batch.map((tenantId) => answerUsage(reader, { ...query, tenantId, groupBy })),
    );
    done.forEach((answer, j) => answers.push([batch[j]!, answer]));
  }
  const totals: Sum = [0, 0, 0, 0, 0, 0];
  const byKey = new Map<string, Sum>();
  for (const [tenantId, answer] of answers) {
    add(totals, answer.totals);
    const rows =
      query.groupBy === 'tenant'
        ? used(answer.totals)
          ? [{ key: tenantId, ...answer.totals }]
          : []
        : answer.rows;
    for (const row of rows) {
      const sum = byKey.get(row.key) ?? [0, 0, 0, 0, 0, 0];
      byKey.set(row.key, add(sum, row));
    }
  }
  const rows: UsageRow[] = [...byKey.keys()].sort().map((key) => {
    const sum = byKey.get(key)!;
    return {
      key,
      ...figures(sum),
      ...(groupBy === 'agent' ? { feedbackUp: sum[4], feedbackDown: sum[5] } : {}),
    };
  });
  return { totals: figures(totals), rows };
};
