/** How long to wait between attempts: exponential growth, capped, with full jitter. */
export interface BackoffPolicy {
  /** The cap of the first wait; each later wait's cap doubles. */
  baseDelayMs: number;
  /** No wait is longer than this. */
  maxDelayMs: number;
}

/**
 * The wait before attempt `attempt + 1` after `attempt` failed (1-based): a uniform draw in
 * [0, min(max, base·2^(attempt-1))) — "full jitter", so retrying callers spread out.
 */
export const backoffDelayMs = (
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number => {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(Math.min(1, Math.max(0, random())) * cap);
};

/** The pause between attempts: @keel/core's one sleep (rejects as soon as its signal aborts). */
export { sleep } from '@keel/core';
