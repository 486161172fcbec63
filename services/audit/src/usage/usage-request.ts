import { ValidationError } from '@keel/core';
import { daysInclusive, isKnownTimeZone, utcDateOf, utcMidnight } from './time-zones.js';

/** How usage rows are keyed. */
export type UsageGroupBy = 'day' | 'model' | 'user' | 'agent';

/** How usage rows are keyed when several tenants are read as one: also by tenant. */
export type UsageAcrossGroupBy = UsageGroupBy | 'tenant';

const GROUPINGS: readonly string[] = ['day', 'model', 'user', 'agent'];

/** A checked usage query. */
export interface UsageQuery {
  tenantId: string;
  from: string;
  to: string;
  tz: string;
  groupBy: UsageGroupBy;
}

/** Longest range one query may cover, in days (a year, leap day included). */
export const MAX_RANGE_DAYS = 366;

const DATE = /^\d{4}-\d{2}-\d{2}$/;

const fail = (field: string, message: string): never => {
  throw new ValidationError(`${field} ${message}`, { field });
};

const dateField = (value: string, field: string): string => {
  if (!DATE.test(value)) return fail(field, `must be a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  const ms = utcMidnight(value);
  if (!Number.isFinite(ms) || utcDateOf(ms) !== value) return fail(field, `is not a calendar date: ${value}`);
  if (value < '1970-01-02' || value > '9999-12-30') return fail(field, 'must be between 1970 and 9999');
  return value;
};

/**
 * Checks a usage query (API.md `GET /v1/usage`): dates as `YYYY-MM-DD`, `from` ≤ `to`, at most
 * MAX_RANGE_DAYS days, an IANA zone Intl knows (empty: UTC), a known grouping. A bad value is a
 * ValidationError whose message starts with the field's name.
 */
export const checkUsageQuery = (input: {
  tenantId: string;
  from: string;
  to: string;
  tz?: string;
  groupBy?: string;
}): UsageQuery => {
  if (!input.tenantId) fail('tenantId', 'is required');
  const from = dateField(input.from, 'from');
  const to = dateField(input.to, 'to');
  if (from > to) fail('from', `must not be after to (${from} > ${to})`);
  const days = daysInclusive(from, to);
  if (days > MAX_RANGE_DAYS) fail('to', `the range covers ${days} days; at most ${MAX_RANGE_DAYS} per query`);
  const tz = input.tz?.trim() || 'UTC';
  if (tz.length > 64 || !isKnownTimeZone(tz))
    fail('tz', `is not a known IANA time zone: ${JSON.stringify(tz)}`);
  const groupBy = input.groupBy || 'day';
  if (!GROUPINGS.includes(groupBy)) {
    fail('groupBy', `must be day, model, user or agent, got ${JSON.stringify(groupBy)}`);
  }
  return { tenantId: input.tenantId, from, to, tz, groupBy: groupBy as UsageGroupBy };
};
