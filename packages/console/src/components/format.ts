// How figures read on every page: money in dollars (cents below one dollar), tokens grouped, times local.

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });
const count = new Intl.NumberFormat('en-US');

/** Dollars; amounts under a cent keep two significant digits (one turn of a small model costs $0.00004). */
export const formatUsd = (value: number | null | undefined): string => {
  if (value === null || value === undefined) return '—';
  if (value !== 0 && Math.abs(value) < 0.01) return `$${Number(value.toPrecision(2))}`;
  return usd.format(value);
};

/** Token and turn counts, grouped by thousands. */
export const formatCount = (value: number | null | undefined): string =>
  value === null || value === undefined ? '—' : count.format(value);

/** An instant in the browser's time zone. */
export const formatTime = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' }) : '—';

/** Arguments and results as they were sent, indented. */
export const formatJson = (value: unknown): string => JSON.stringify(value, null, 2) ?? String(value);

/** A long id, shortened for a table cell (the full id stays in the title). */
export const shortId = (id: string): string => (id.length > 14 ? `${id.slice(0, 6)}…${id.slice(-6)}` : id);
