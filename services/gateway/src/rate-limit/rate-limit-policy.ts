import type { RateLimitPolicy } from '@keel/core';
import { readEnv } from '@keel/runtime';

/** A per-minute policy from one of the schema's rate-limit settings (checked and defaulted there). */
const perMinute = (limit: unknown): RateLimitPolicy => ({ limit: Number(limit), windowMs: 60_000 });

/**
 * The gateway's rate limit: `KEEL_RATE_LIMIT_RPM` requests per key per minute (a fixed window:
 * the count resets at each whole minute), 0 turns limiting off.
 */
export const rateLimitPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): RateLimitPolicy =>
  perMinute(readEnv('KEEL_RATE_LIMIT_RPM', env));

/**
 * The limit over all of a tenant's keys (`KEEL_TENANT_RATE_LIMIT_RPM`, 0: off): an admin may issue
 * keys, so a per-key limit alone would let one tenant multiply its share of the gateway.
 */
export const tenantRateLimitPolicyFromEnv = (env: NodeJS.ProcessEnv = process.env): RateLimitPolicy =>
  perMinute(readEnv('KEEL_TENANT_RATE_LIMIT_RPM', env));

/** The JetStream KV bucket of the shared counters (`KEEL_RATE_LIMIT_BUCKET`), when set. */
export const rateLimitBucketFromEnv = (env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const bucket = readEnv('KEEL_RATE_LIMIT_BUCKET', env);
  return bucket === undefined ? undefined : String(bucket);
};
