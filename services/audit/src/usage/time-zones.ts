/** Time-zone arithmetic with Intl only: day boundaries of any IANA zone as UTC instants. */

/** One 15-minute bucket in milliseconds: every offset in use today is a multiple of it. */
export const QUARTER_MS = 15 * 60_000;
const DAY_MS = 24 * 3_600_000;

const formats = new Map<string, Intl.DateTimeFormat>();

/** A cached formatter of `tz` (constructing one costs far more than using it). Throws RangeError for an unknown zone. */
const formatOf = (tz: string): Intl.DateTimeFormat => {
  let format = formats.get(tz);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(tz, format);
  }
  return format;
};

/** True when Intl knows the zone (`UTC`, `Asia/Kolkata`, …). */
export const isKnownTimeZone = (tz: string): boolean => {
  try {
    formatOf(tz);
    return true;
  } catch {
    return false;
  }
};

/** The local wall-clock time at `utcMs` in `tz`, read back as if it were UTC (ms). */
const wallClock = (utcMs: number, tz: string): number => {
  const parts: Record<string, number> = {};
  for (const part of formatOf(tz).formatToParts(new Date(utcMs))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
};

/** `YYYY-MM-DD` of a UTC midnight (ms). */
export const utcDateOf = (utcMs: number): string => new Date(utcMs).toISOString().slice(0, 10);

/** UTC midnight (ms) of a `YYYY-MM-DD` date. */
export const utcMidnight = (date: string): number => Date.parse(`${date}T00:00:00Z`);

/** The date after `date` (`YYYY-MM-DD`). */
export const nextDate = (date: string): string => utcDateOf(utcMidnight(date) + DAY_MS);

/** The local calendar date (as its UTC midnight, ms) of the instant `utcMs` in `tz`. */
const localDay = (utcMs: number, tz: string): number => {
  const wall = wallClock(utcMs, tz);
  return wall - (((wall % DAY_MS) + DAY_MS) % DAY_MS);
};

/**
 * The first instant (UTC ms) of the calendar day `date` in `tz`: local midnight, or the first
 * instant after it when a transition skips midnight. Found from the zone's offsets, checked, and
 * by a search over 15-minute steps when the offsets alone do not settle it.
 */
export const dayStart = (date: string, tz: string): number => {
  const target = utcMidnight(date);
  const isStart = (t: number): boolean => localDay(t, tz) >= target && localDay(t - QUARTER_MS, tz) < target;
  let guess = target - (wallClock(target, tz) - target);
  guess = target - (wallClock(guess, tz) - guess);
  if (isStart(guess)) return guess;
  // Rare: a transition at midnight. Every offset today is a whole number of quarters and lies within ±15 h.
  let lo = Math.floor((target - 15 * 3_600_000) / QUARTER_MS);
  let hi = Math.ceil((target + 15 * 3_600_000) / QUARTER_MS);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDay(mid * QUARTER_MS, tz) >= target) hi = mid;
    else lo = mid + 1;
  }
  return lo * QUARTER_MS;
};

/** The calendar day of `utcMs` in `tz`, as `YYYY-MM-DD`. */
export const localDateOf = (utcMs: number, tz: string): string => utcDateOf(localDay(utcMs, tz));

/** Number of calendar days from `from` to `to`, both included. */
export const daysInclusive = (from: string, to: string): number =>
  Math.round((utcMidnight(to) - utcMidnight(from)) / DAY_MS) + 1;
