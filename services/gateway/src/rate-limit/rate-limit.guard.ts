import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { AuthenticatedRequest } from '../auth/principal.js';
import { RateLimitedError, RateLimitService, retryAfterSeconds } from './rate-limit.service.js';

/** The part of Fastify's reply the guard writes. */
interface LimitReply {
  header(name: string, value: string): unknown;
}

/**
 * Runs after the AuthGuard on every HTTP route: a request with a principal (every route but the
 * public probes) is counted against its key; over the limit it is 429 `rate_limited` with
 * `Retry-After` (seconds until the key's window resets). Admitted responses carry
 * `RateLimit-Limit` / `RateLimit-Remaining` so clients can pace themselves.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(@Inject(RateLimitService) private readonly limits: RateLimitService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const principal = http.getRequest<AuthenticatedRequest>().principal;
    if (!principal) return true;
    const reply = http.getResponse<LimitReply>();
    try {
      const decision = await this.limits.check(principal);
      if (decision && decision.remaining !== Number.MAX_SAFE_INTEGER) {
        reply.header('ratelimit-limit', String(decision.limit));
        reply.header('ratelimit-remaining', String(decision.remaining));
      }
      return true;
    } catch (error) {
      if (error instanceof RateLimitedError) {
        reply.header('retry-after', String(retryAfterSeconds(error.decision)));
      }
      throw error;
    }
  }
}
