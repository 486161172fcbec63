/**
 * Sums of usage as stored in the rollups: `[promptTokens, completionTokens, costNanoUsd, turns,
 * usageEvents, feedbackUp?, feedbackDown?]`. Cost is kept in integer nano-dollars so sums are
 * exact and independent of the order they are added in (floating-point dollars are not). The
 * feedback counts (the latest rating per message; a changed rating moves one) were added later:
 * totals stored before them have five entries, read as zero feedback.
 */
export type Totals = [number, number, number, number, number, number?, number?];

/** Entries of a full Totals. */
const TOTALS_LENGTH = 7;

/** A fresh zero. */
export const zero = (): Totals => [0, 0, 0, 0, 0, 0, 0];

/** Adds `b` into `a` (mutates `a`) and returns it. */
export const addInto = (a: Totals, b: Readonly<Totals>): Totals => {
  for (let i = 0; i < TOTALS_LENGTH; i++) a[i] = (a[i] ?? 0) + (b[i] ?? 0);
  return a;
};

/**
 * Adds `value` into `map[key]`, creating the entry. Keys are user ids and model names, chosen by
 * callers: only an own entry is added to, and a new one is defined as an own property, so
 * `constructor` is an ordinary key and `__proto__` never reaches (or pollutes) a prototype.
 */
export const addAt = (map: Record<string, Totals>, key: string, value: Readonly<Totals>): void => {
  if (Object.hasOwn(map, key)) {
    addInto(map[key]!, value);
    return;
  }
  Object.defineProperty(map, key, {
    value: addInto(zero(), value),
    writable: true,
    enumerable: true,
    configurable: true,
  });
};

/** A USD cost as integer nano-dollars (null: the price is unknown, counted as 0 in cost sums). */
export const nanoUsd = (costUsd: number | null | undefined): number =>
  typeof costUsd === 'number' && Number.isFinite(costUsd) ? Math.round(costUsd * 1e9) : 0;

/** The API's view of a sum (API.md "Usage and audit"). */
export interface UsageFigures {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  turns: number;
}

/** The API figures of stored totals. */
export const figuresOf = (t: Readonly<Totals>): UsageFigures => ({
  promptTokens: t[0],
  completionTokens: t[1],
  costUsd: t[2] / 1e9,
  turns: t[3],
});

/** The feedback counts of stored totals (rows grouped by agent carry them). */
export const feedbackOf = (t: Readonly<Totals>): { feedbackUp: number; feedbackDown: number } => ({
  feedbackUp: t[5] ?? 0,
  feedbackDown: t[6] ?? 0,
});
