import type { RateLimitPolicy } from '@keel/core';

/** Requests per minute per API key when `KEEL_RATE_LIMIT_RPM` is unset. */
export const DEFAULT_RATE_LIMIT_RPM = 600;

/**
 * The gateway's rate limit from the environment: `KEEL_RATE_LIMIT_RPM` requests per key per
 * minute (a fixed window: the count resets at each whole minute), 0 turns limiting off.
 */
export const rateLimitPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): RateLimitPolicy => {
  const raw = env.KEEL_RATE_LIMIT_RPM?.trim();
  if (raw === undefined || raw === '') return { limit: DEFAULT_RATE_LIMIT_RPM, windowMs: 60_000 };
  if (!/^\d{1,9}$/.test(raw)) {
    throw new Error(
      `KEEL_RATE_LIMIT_RPM must be a whole number of requests per minute (0: off), got "${raw}"`,
    );
  }
  return { limit: Number(raw), windowMs: 60_000 };
};
