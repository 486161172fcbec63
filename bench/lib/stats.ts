/** Latency figures of one scenario, in milliseconds. */
export interface Summary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** The `p`-th percentile (0–100) of `values` by the nearest-rank method; NaN for no values. */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
};

/** The median (p50) of `values`. */
export const median = (values: readonly number[]): number => percentile(values, 50);

/** p50, p99, mean and range of a sample of latencies. */
export const summarize = (values: readonly number[]): Summary => ({
  n: values.length,
  p50: percentile(values, 50),
  p99: percentile(values, 99),
  mean: values.reduce((a, b) => a + b, 0) / Math.max(1, values.length),
  min: Math.min(...values),
  max: Math.max(...values),
});

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution. */
export const now = (): number => performance.now();

/** Runs `fn` and returns how long it took in milliseconds, with its result. */
export const timed = async <T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> => {
  const start = now();
  const value = await fn();
  return { ms: now() - start, value };
};
