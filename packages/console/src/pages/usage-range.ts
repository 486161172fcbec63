// Calendar days in a time zone, as the usage route takes them (`from`/`to`, both included).

/** Today's date (YYYY-MM-DD) in `timeZone`. */
export const todayIn = (timeZone: string, now = new Date()): string =>
  new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    now,
  );

/** The date `days` days after `day` (negative: before). */
export const addDays = (day: string, days: number): string => {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + days);
  return date.toISOString().slice(0, 10);
};

/** The first day of `day`'s month. */
export const monthStart = (day: string): string => `${day.slice(0, 8)}01`;

/** Time zones to offer: UTC first, the browser's own, then every zone the browser knows. */
export const timeZones = (): string[] => {
  const own = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const all = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set(['UTC', own, ...all])];
};
