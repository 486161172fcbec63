/** How many requests one key may make per window. */
export interface RateLimitPolicy {
  /** Requests admitted per key and window; 0 or less turns limiting off. */
  limit: number;
  /** Window length in milliseconds (60 000 for "requests per minute"). */
  windowMs: number;
}

/** The answer to one request: admitted or not, and when the key's window resets. */
export interface RateLimitDecision {
  allowed: boolean;
  /** The policy's limit. */
  limit: number;
  /** Requests the key may still make in this window after this one. */
  remaining: number;
  /** Milliseconds until the window ends (when a refused key may try again). */
  retryAfterMs: number;
}

/**
 * Counts requests per key in fixed windows (`floor(now / windowMs)`), shared by every gateway
 * instance that uses the same backing store. A refused request is not counted, so a client that
 * keeps retrying early does not push its reset further away.
 */
export interface RateLimiter {
  readonly policy: RateLimitPolicy;
  /** Counts one request of `key` if the window has room; says whether it is admitted. */
  hit(key: string): Promise<RateLimitDecision>;
  /** Releases what the limiter holds (connections, timers). Idempotent. */
  close(): Promise<void>;
}

/** The start of the window `now` falls in, and the milliseconds left in it. */
export const windowOf = (now: number, windowMs: number): { start: number; remainingMs: number } => {
  const start = Math.floor(now / windowMs) * windowMs;
  return { start, remainingMs: start + windowMs - now };
};

/** The decision for a key whose window holds `count` admitted requests after this one's turn. */
export const decisionOf = (
  policy: RateLimitPolicy,
  allowed: boolean,
  count: number,
  remainingMs: number,
): RateLimitDecision => ({
  allowed,
  limit: policy.limit,
  remaining: Math.max(0, policy.limit - count),
  retryAfterMs: remainingMs,
});

/** The decision when limiting is off: everything passes. */
export const unlimited = (policy: RateLimitPolicy): RateLimitDecision => ({
  allowed: true,
  limit: policy.limit,
  remaining: Number.MAX_SAFE_INTEGER,
  retryAfterMs: 0,
});
