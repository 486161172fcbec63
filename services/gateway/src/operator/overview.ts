import { fail } from '../config/request-fields.js';

/** The answer of `GET /v1/operator/overview` (API.md "Operator console"). */
export interface Overview {
  tenants: number;
  turnsRunning: number;
  approvalsPending: number;
  /** Client-side tool calls waiting for their client: 0 until client tools exist. */
  clientCallsPending: number;
  /** Dead letters not replayed yet (counted up to DEAD_LETTER_COUNT_CAP). */
  deadLetters: number;
  costTodayUsd: number;
  costMonthUsd: number;
  tokensToday: number;
}

/** Most dead letters the overview counts (the port lists; it has no count). */
export const DEAD_LETTER_COUNT_CAP = 10_000;

/** The overview's time zone: `?tz=` (an IANA zone Intl knows, at most 64 characters), UTC by default. */
export const overviewZone = (value: unknown): string => {
  if (value === undefined || value === '') return 'UTC';
  if (typeof value !== 'string') return fail('tz', 'tz must be given once');
  try {
    if (value.length > 64) throw new RangeError('too long');
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch {
    return fail('tz', `tz is not a known IANA time zone: ${JSON.stringify(value)}`);
  }
  return value;
};
