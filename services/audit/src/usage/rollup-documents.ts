import type { Totals } from './usage-totals.js';
import { QUARTER_MS, utcDateOf } from './time-zones.js';

/**
 * One UTC day of a tenant inside its month document: the tenant's totals per 15-minute bucket
 * (`s`, bucket 0–95 of the UTC day) and the day's totals per model (`m`), user (`u`) and agent (`a`).
 */
export interface MonthDay {
  s: Record<string, Totals>;
  m: Record<string, Totals>;
  u: Record<string, Totals>;
  a: Record<string, Totals>;
}

/** Body of a tenant × UTC month rollup: its days by day of month (`01`–`31`). Read by every query. */
export interface MonthBody {
  d: Record<string, MonthDay>;
}

/**
 * Body of a tenant × UTC day × dimension rollup (`user`, `model` or `agent`), the finest grain:
 * per 15-minute bucket (0–95), the totals of each user (model, agent) id. Read for the ragged edges of a
 * range cut in a zone, only the dimension the query groups by.
 */
export interface DayBody {
  q: Record<string, Record<string, Totals>>;
}

/** The dimensions a day document details. */
export type DayDimension = 'user' | 'model' | 'agent';

/**
 * The dimensions, in the order their documents are written. `agent` day documents exist for usage
 * projected since they were added: a by-agent query over older days a zone cuts counts only the
 * whole UTC days (the month documents have had `a` from the start).
 */
export const DAY_DIMENSIONS: readonly DayDimension[] = ['user', 'model', 'agent'];

/** A rollup document: its id, tenant, the global log position it includes events up to, and its body. */
export interface RollupDoc<Body> {
  id: string;
  tenantId: string;
  /** Every event of the log at or below this position that touches the document is in its body. */
  pos: number;
  body: Body;
}

/** The two kinds of rollup documents. */
export type RollupKind = 'month' | 'day';

/** Id of the month document of `tenantId` holding the UTC instant `utcMs`. */
export const monthIdOf = (tenantId: string, utcMs: number): string =>
  `${tenantId}|${utcDateOf(utcMs).slice(0, 7)}`;

/** Id of the `dimension` day document of `tenantId` holding the UTC instant `utcMs`. */
export const dayIdOf = (tenantId: string, utcMs: number, dimension: DayDimension): string =>
  `${tenantId}|${utcDateOf(utcMs)}|${dimension}`;

/** The 15-minute bucket (0–95) of `utcMs` within its UTC day. */
export const quarterOf = (utcMs: number): number =>
  Math.floor((((utcMs % 86_400_000) + 86_400_000) % 86_400_000) / QUARTER_MS);

/** An empty body of the kind. */
export const emptyBody = (kind: RollupKind): MonthBody | DayBody =>
  kind === 'month' ? { d: {} } : { q: {} };
