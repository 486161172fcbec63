import type { DayBody, MonthBody, RollupDoc } from './rollup-documents.js';
import type { UsageQuery } from './usage-request.js';
import type { Totals, UsageFigures } from './usage-totals.js';
import { addAt, addInto, feedbackOf, figuresOf, zero } from './usage-totals.js';
import { QUARTER_MS, dayStart, nextDate, utcDateOf } from './time-zones.js';

/** The rollups a query reads. */
export interface RollupReader {
  loadMonths(ids: readonly string[]): Promise<Map<string, RollupDoc<MonthBody>>>;
  loadDays(ids: readonly string[]): Promise<Map<string, RollupDoc<DayBody>>>;
}

/** One row of a usage answer; grouped by agent, with the agent's feedback counts. */
export interface UsageRow extends UsageFigures {
  key: string;
  feedbackUp?: number;
  feedbackDown?: number;
}

/** The answer of API.md `GET /v1/usage`. */
export interface UsageAnswer {
  totals: UsageFigures;
  rows: UsageRow[];
}

const QUARTERS_PER_DAY = 96;
const DAY_MS = 86_400_000;

/** The local days of the query and their first 15-minute bucket (global index: UTC ms / 15 min). */
const dayBounds = (query: UsageQuery): { dates: string[]; starts: number[] } => {
  const dates: string[] = [];
  const starts: number[] = [];
  for (let date = query.from; ; date = nextDate(date)) {
    // A start between buckets (historic offsets only) goes to the next bucket.
    starts.push(Math.ceil(dayStart(date, query.tz) / QUARTER_MS));
    if (date > query.to) break;
    dates.push(date);
  }
  return { dates, starts };
};

/** The last index i with starts[i] ≤ q (q within the range). */
const dayIndexOf = (starts: readonly number[], q: number): number => {
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (starts[mid]! <= q) lo = mid;
    else hi = mid - 1;
  }
  return lo;
};

/**
 * Answers a usage query from the rollups: the range is the local days `from`..`to` in `tz`, cut
 * at 15-minute buckets, which every offset in use is a multiple of. Totals and per-day rows come
 * from the month documents' buckets; per-model, per-user and per-agent rows from their per-day totals for
 * UTC days wholly inside the range, and from the buckets of the day documents of that dimension
 * for the (at most two) UTC days the range cuts.
 */
export const answerUsage = async (reader: RollupReader, query: UsageQuery): Promise<UsageAnswer> => {
  const { dates, starts } = dayBounds(query);
  const range: QuarterRange = { first: starts[0]!, end: starts[starts.length - 1]! };
  const sums: Sums = { totals: zero(), byDay: dates.map(() => zero()), byKey: {} };
  const cutDays = await addFromMonths(reader, query, range, starts, sums);
  if (query.groupBy !== 'day' && cutDays.length > 0)
    await addFromCutDays(reader, query, range, cutDays, sums);
  const { totals, byDay, byKey } = sums;
  const rows: UsageRow[] =
    query.groupBy === 'day'
      ? dates.flatMap((key, i) => (byDay[i]![4] > 0 ? [{ key, ...figuresOf(byDay[i]!) }] : []))
      : Object.keys(byKey)
          .filter((key) => byKey[key]![4] > 0)
          .sort()
          .map((key) => ({
            key,
            ...figuresOf(byKey[key]!),
            ...(query.groupBy === 'agent' ? feedbackOf(byKey[key]!) : {}),
          }));
  return { totals: figuresOf(totals), rows };
};

/** The 15-minute buckets of a query: `first` included, `end` excluded. */
interface QuarterRange {
  first: number;
  end: number;
}

/** What a query adds up: the totals, per local day, per key of the dimension grouped by. */
interface Sums {
  totals: Totals;
  byDay: Totals[];
  byKey: Record<string, Totals>;
}

/**
 * Adds the month documents' buckets in the range to the totals (and per local day), and the
 * per-key totals of the UTC days wholly inside it; returns the UTC days the range cuts.
 */
const addFromMonths = async (
  reader: RollupReader,
  query: UsageQuery,
  { first, end }: QuarterRange,
  starts: readonly number[],
  sums: Sums,
): Promise<number[]> => {
  const firstDay = Math.floor((first * QUARTER_MS) / DAY_MS);
  const lastDay = Math.ceil((end * QUARTER_MS) / DAY_MS); // exclusive
  const monthIds = new Set<string>();
  for (let day = firstDay; day < lastDay; day++) {
    monthIds.add(`${query.tenantId}|${utcDateOf(day * DAY_MS).slice(0, 7)}`);
  }
  const months = await reader.loadMonths([...monthIds]);
  const cutDays: number[] = [];
  for (let day = firstDay; day < lastDay; day++) {
    const date = utcDateOf(day * DAY_MS);
    const entry = months.get(`${query.tenantId}|${date.slice(0, 7)}`)?.body.d[date.slice(8, 10)];
    const dayFirst = day * QUARTERS_PER_DAY;
    const whole = dayFirst >= first && dayFirst + QUARTERS_PER_DAY <= end;
    if (!whole) cutDays.push(day);
    if (!entry) continue;
    for (const [slot, value] of Object.entries(entry.s)) {
      const q = dayFirst + Number(slot);
      if (q < first || q >= end) continue;
      addInto(sums.totals, value);
      if (query.groupBy === 'day') addInto(sums.byDay[dayIndexOf(starts, q)]!, value);
    }
    if (whole && query.groupBy !== 'day') {
      const perKey = { model: entry.m, user: entry.u, agent: entry.a ?? {} }[query.groupBy];
      for (const [key, value] of Object.entries(perKey)) addAt(sums.byKey, key, value);
    }
  }
  return cutDays;
};

/** Adds, per key, the buckets in the range of the days the range cuts, from their day documents. */
const addFromCutDays = async (
  reader: RollupReader,
  query: UsageQuery,
  { first, end }: QuarterRange,
  cutDays: readonly number[],
  sums: Sums,
): Promise<void> => {
  // Only the dimension grouped by: a day document of it holds each bucket's totals per id.
  const idOf = (day: number): string => `${query.tenantId}|${utcDateOf(day * DAY_MS)}|${query.groupBy}`;
  const days = await reader.loadDays(cutDays.map(idOf));
  for (const day of cutDays) {
    const doc = days.get(idOf(day));
    if (!doc) continue;
    for (const [slot, byId] of Object.entries(doc.body.q)) {
      const q = day * QUARTERS_PER_DAY + Number(slot);
      if (q < first || q >= end) continue;
      for (const [key, value] of Object.entries(byId)) addAt(sums.byKey, key, value);
    }
  }
};
