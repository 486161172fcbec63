import type { RateLimitPolicy } from '@keel/core';

/** Requests per minute per API key when `KEEL_RATE_LIMIT_RPM` is unset. */
export const DEFAULT_RATE_LIMIT_RPM = 600;

/** Requests per minute per tenant, all its keys together, when `KEEL_TENANT_RATE_LIMIT_RPM` is unset. */
export const DEFAULT_TENANT_RATE_LIMIT_RPM = 3000;

const perMinute = (env: NodeJS.ProcessEnv, variable: string, fallback: number): RateLimitPolicy => {
  const raw = env[variable]?.trim();
  if (raw === undefined || raw === '') return { limit: fallback, windowMs: 60_000 };
  if (!/^\d{1,9}$/.test(raw)) {
    throw new Error(`${variable} must be a whole number of requests per minute (0: off), got "${raw}"`);
  }
  return { limit: Number(raw), windowMs: 60_000 };
};

/**
 * The gateway's rate limit from the environment: `KEEL_RATE_LIMIT_RPM` requests per key per
 * minute (a fixed window: the count resets at each whole minute), 0 turns limiting off.
 */
export const rateLimitPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): RateLimitPolicy =>
  perMinute(env, 'KEEL_RATE_LIMIT_RPM', DEFAULT_RATE_LIMIT_RPM);

/**
 * The limit over all of a tenant's keys (`KEEL_TENANT_RATE_LIMIT_RPM`, 0: off): an admin may issue
 * keys, so a per-key limit alone would let one tenant multiply its share of the gateway.
 */
export const tenantRateLimitPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): RateLimitPolicy =>
  perMinute(env, 'KEEL_TENANT_RATE_LIMIT_RPM', DEFAULT_TENANT_RATE_LIMIT_RPM);
