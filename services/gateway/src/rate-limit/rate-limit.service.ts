import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '@keel/core';
import { InMemoryRateLimiter, ResourceExhaustedError } from '@keel/core';
import type { KeelConfig, KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleDestroy } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import {
  rateLimitBucketFromEnv,
  rateLimitPolicyFromEnv,
  tenantRateLimitPolicyFromEnv,
} from './rate-limit-policy.js';

/** Nest token of the gateway's RateLimiters (NATS KV when NATS_URL is set, else in memory). */
export const RATE_LIMITER = Symbol.for('keel.gateway.rate-limiter');

/** The two counters every tenant request passes: its key's, then its tenant's (all keys together). */
export interface RateLimiters {
  perKey: RateLimiter;
  /** Absent: no tenant-wide limit (unit tests of the key limit). */
  perTenant?: RateLimiter;
}

/** The counters: shared by every gateway on the same NATS, or this process's own in dev mode. */
export const createRateLimiter = async (config: KeelConfig, logger: KeelLogger): Promise<RateLimiters> => {
  const policies = { perKey: rateLimitPolicyFromEnv(), perTenant: tenantRateLimitPolicyFromEnv() };
  if (config.natsUrl === undefined) {
    if (policies.perKey.limit > 0 || policies.perTenant.limit > 0) {
      logger.info({ policies }, 'rate limits counted in process memory (no NATS_URL)');
    }
    return {
      perKey: new InMemoryRateLimiter(policies.perKey),
      perTenant: new InMemoryRateLimiter(policies.perTenant),
    };
  }
  const { NatsRateLimiter } = await import('@keel/core/nats');
  const bucket = rateLimitBucketFromEnv();
  const connect = (policy: RateLimitPolicy, scope: string) =>
    NatsRateLimiter.connect({
      servers: config.natsUrl!.split(',').map((server) => server.trim()),
      policy,
      ...(bucket ? { bucket } : {}),
      connectionName: `keel-gateway-rate-limit-${scope}-${process.pid}`,
    });
  const perKey = await connect(policies.perKey, 'key');
  try {
    return { perKey, perTenant: await connect(policies.perTenant, 'tenant') };
  } catch (error) {
    await perKey.close();
    throw error;
  }
};

/** The counter of a tenant: never a key id (those are not prefixed), so the two cannot collide. */
const tenantCounter = (tenantId: string): string => `tenant:${tenantId}`;

/** The refusal of a request over its key's limit: 429 / RESOURCE_EXHAUSTED; the caller adds Retry-After. */
export class RateLimitedError extends ResourceExhaustedError {
  constructor(
    readonly decision: RateLimitDecision,
    scope: 'key' | 'tenant' = 'key',
  ) {
    super(
      `rate limit of ${decision.limit} requests per minute exceeded for this ${scope}; ` +
        `retry after ${retryAfterSeconds(decision)} s`,
      { details: { retryAfterSeconds: retryAfterSeconds(decision) } },
    );
  }
}

/** Whole seconds until the window resets (at least 1), as `Retry-After` says it. */
export const retryAfterSeconds = (decision: RateLimitDecision): number =>
  Math.max(1, Math.ceil(decision.retryAfterMs / 1000));

/**
 * Counts each authenticated request against its key (tenant keys and the operator key alike) and,
 * for a tenant key, against its tenant, and refuses the ones over either limit. When the counters
 * cannot be reached, the request passes and the failure is logged: an outage of the limiter's
 * store must not take the API down with it.
 */
@Injectable()
export class RateLimitService implements OnModuleDestroy {
  /** When the last "limiter unavailable" warning was logged: at most one per 10 s, not one per request. */
  private lastWarnedAt = 0;
  private unwarned = 0;

  constructor(
    @Inject(RATE_LIMITER) private readonly limiters: RateLimiters,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  /** Counts one request of `principal`; throws RateLimitedError when its key or tenant is over the limit. */
  async check(principal: Principal): Promise<RateLimitDecision | undefined> {
    const { perKey, perTenant } = this.limiters;
    const decision = await this.hit(perKey, principal.keyId, principal);
    if (decision && !decision.allowed) throw new RateLimitedError(decision, 'key');
    if (principal.kind !== 'tenant' || !perTenant) return decision;
    // After the key's answer, not alongside it: a request its key refuses takes no tenant slot.
    const tenant = await this.hit(perTenant, tenantCounter(principal.tenantId), principal);
    if (tenant && !tenant.allowed) throw new RateLimitedError(tenant, 'tenant');
    // The headers speak of the tighter of the two.
    if (!decision || (tenant && tenant.remaining < decision.remaining)) return tenant;
    return decision;
  }

  private async hit(
    limiter: RateLimiter,
    counter: string,
    principal: Principal,
  ): Promise<RateLimitDecision | undefined> {
    try {
      return await limiter.hit(counter);
    } catch (error) {
      this.unwarned++;
      if (Date.now() - this.lastWarnedAt >= 10_000) {
        this.logger.warn(
          { err: error, keyId: principal.keyId, requestsLetThrough: this.unwarned },
          'rate limiter unavailable: requests let through',
        );
        this.lastWarnedAt = Date.now();
        this.unwarned = 0;
      }
      return undefined;
    }
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([this.limiters.perKey.close(), this.limiters.perTenant?.close()]);
  }
}
