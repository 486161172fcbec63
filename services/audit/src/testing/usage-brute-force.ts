// The reference the usage tests compare the rollups with: a plain sum over raw usage events.
import { localDateOf } from '../usage/time-zones.js';

/** One raw usage event as a test wrote it. */
export interface RawUsage {
  tenantId: string;
  /** UTC ms. */
  at: number;
  user: string;
  model: string;
  agent: string;
  p: number;
  c: number;
  cost: number | null;
  /** The turn's first model call (counts the turn). */
  first: boolean;
}

const localDays = new Map<string, string>();
const localDay = (at: number, tz: string): string => {
  const key = `${tz}|${at}`;
  let day = localDays.get(key);
  if (day === undefined) localDays.set(key, (day = localDateOf(at, tz)));
  return day;
};

/** The usage answer computed from raw events: those whose local day in `tz` is within `from`..`to`. */
export const bruteForceUsage = (
  raw: readonly RawUsage[],
  tenantId: string | readonly string[],
  from: string,
  to: string,
  tz: string,
  groupBy: 'day' | 'model' | 'user' | 'agent' | 'tenant',
) => {
  const tenants = typeof tenantId === 'string' ? [tenantId] : tenantId;
  type Sum = { p: number; c: number; cost: number; turns: number };
  const rows = new Map<string, Sum>();
  const totals: Sum = { p: 0, c: 0, cost: 0, turns: 0 };
  for (const u of raw) {
    if (!tenants.includes(u.tenantId)) continue;
    const day = localDay(u.at, tz);
    if (day < from || day > to) continue;
    const key = groupBy === 'day' ? day : groupBy === 'tenant' ? u.tenantId : u[groupBy];
    const row = rows.get(key) ?? { p: 0, c: 0, cost: 0, turns: 0 };
    for (const target of [row, totals]) {
      target.p += u.p;
      target.c += u.c;
      target.cost += Math.round((u.cost ?? 0) * 1e9);
      target.turns += u.first ? 1 : 0;
    }
    rows.set(key, row);
  }
  const figures = (t: Sum) => ({
    promptTokens: t.p,
    completionTokens: t.c,
    costUsd: t.cost / 1e9,
    turns: t.turns,
  });
  return {
    totals: figures(totals),
    // Rows by agent carry the feedback counts (none in these raw events).
    rows: [...rows.keys()].sort().map((key) => ({
      key,
      ...figures(rows.get(key)!),
      ...(groupBy === 'agent' ? { feedbackUp: 0, feedbackDown: 0 } : {}),
    })),
  };
};
