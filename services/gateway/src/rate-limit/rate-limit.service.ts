import type { RateLimitDecision, RateLimiter } from '@keel/core';
import { InMemoryRateLimiter, ResourceExhaustedError } from '@keel/core';
import type { KeelConfig, KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleDestroy } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { rateLimitPolicyFromEnv } from './rate-limit-policy.js';

/** Nest token of the gateway's RateLimiter (NATS KV when NATS_URL is set, else in memory). */
export const RATE_LIMITER = Symbol.for('keel.gateway.rate-limiter');

/** The counters: shared by every gateway on the same NATS, or this process's own in dev mode. */
export const createRateLimiter = async (config: KeelConfig, logger: KeelLogger): Promise<RateLimiter> => {
  const policy = rateLimitPolicyFromEnv();
  if (config.natsUrl === undefined) {
    if (policy.limit > 0) logger.info({ policy }, 'rate limits counted in process memory (no NATS_URL)');
    return new InMemoryRateLimiter(policy);
  }
  const { NatsRateLimiter } = await import('@keel/core/nats');
  return NatsRateLimiter.connect({
    servers: config.natsUrl.split(',').map((server) => server.trim()),
    policy,
    ...(process.env.KEEL_RATE_LIMIT_BUCKET ? { bucket: process.env.KEEL_RATE_LIMIT_BUCKET } : {}),
    connectionName: `keel-gateway-rate-limit-${process.pid}`,
  });
};

/** The refusal of a request over its key's limit: 429 / RESOURCE_EXHAUSTED; the caller adds Retry-After. */
export class RateLimitedError extends ResourceExhaustedError {
  constructor(readonly decision: RateLimitDecision) {
    super(
      `rate limit of ${decision.limit} requests per minute exceeded for this key; ` +
        `retry after ${retryAfterSeconds(decision)} s`,
      { details: { retryAfterSeconds: retryAfterSeconds(decision) } },
    );
  }
}

/** Whole seconds until the window resets (at least 1), as `Retry-After` says it. */
export const retryAfterSeconds = (decision: RateLimitDecision): number =>
  Math.max(1, Math.ceil(decision.retryAfterMs / 1000));

/**
 * Counts each authenticated request against its key (tenant keys and the operator key alike) and
 * refuses the ones over the limit. When the counters cannot be reached, the request passes and
 * the failure is logged: an outage of the limiter's store must not take the API down with it.
 */
@Injectable()
export class RateLimitService implements OnModuleDestroy {
  /** When the last "limiter unavailable" warning was logged: at most one per 10 s, not one per request. */
  private lastWarnedAt = 0;
  private unwarned = 0;

  constructor(
    @Inject(RATE_LIMITER) private readonly limiter: RateLimiter,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  /** Counts one request of `principal`'s key; throws RateLimitedError when over the limit. */
  async check(principal: Principal): Promise<RateLimitDecision | undefined> {
    let decision: RateLimitDecision;
    try {
      decision = await this.limiter.hit(principal.keyId);
    } catch (error) {
      this.logger.warn(
        { err: error, keyId: principal.keyId },
        'rate limiter unavailable: request let through',
      );
      return undefined;
    }
    if (!decision.allowed) throw new RateLimitedError(decision);
    return decision;
  }

  async onModuleDestroy(): Promise<void> {
    await this.limiter.close();
  }
}
