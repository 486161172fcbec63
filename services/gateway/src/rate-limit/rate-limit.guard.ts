import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { AuthenticatedRequest, Principal } from '../auth/principal.js';
import { RateLimitedError, RateLimitService, retryAfterSeconds } from './rate-limit.service.js';

/** The part of Fastify's reply the guard writes. */
interface LimitReply {
  header(name: string, value: string): unknown;
}

const AWAITED_BY_ROUTE = 'keel:rate-limit-awaited-by-route';

/** Where the guard leaves a pending admission for a route that awaits it itself. */
const ADMISSION = Symbol('keel.gateway.rate-limit-admission');

/** A request the guard counted; `ADMISSION` set on a route marked AwaitsRateLimit. */
type CountedRequest = AuthenticatedRequest & { [ADMISSION]?: Promise<void> };

/**
 * Marks a route that awaits its rate-limit answer itself (`admissionOf`), so that meanwhile it can
 * prepare what changes nothing (the streaming send opens its feed's watch alongside the counters'
 * round trips). The route must await it before anything with an effect: until it resolves, the
 * request may still be refused.
 */
export const AwaitsRateLimit = (): MethodDecorator => SetMetadata(AWAITED_BY_ROUTE, true);

/**
 * The rate-limit answer of a request on a route marked AwaitsRateLimit: resolves once the request
 * is admitted (headers set), rejects with the RateLimitedError (Retry-After set) when refused.
 * Resolved at once for a request the guard did not count (no principal).
 */
export const admissionOf = (request: object): Promise<void> =>
  (request as CountedRequest)[ADMISSION] ?? Promise.resolve();

/**
 * Runs after the AuthGuard on every HTTP route: a request with a principal (every route but the
 * public probes) is counted against its key; over the limit it is 429 `rate_limited` with
 * `Retry-After` (seconds until the key's window resets). Admitted responses carry
 * `RateLimit-Limit` / `RateLimit-Remaining` so clients can pace themselves. On a route marked
 * AwaitsRateLimit the count starts here and the route awaits its answer (`admissionOf`).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    @Inject(RateLimitService) private readonly limits: RateLimitService,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const request = http.getRequest<CountedRequest>();
    const principal = request.principal;
    if (!principal) return true;
    const admission = this.admit(principal, http.getResponse<LimitReply>());
    if (this.reflector.get<boolean>(AWAITED_BY_ROUTE, context.getHandler())) {
      // The route awaits it; until then a refusal must not count as unhandled.
      admission.catch(() => undefined);
      request[ADMISSION] = admission;
      return true;
    }
    await admission;
    return true;
  }

  /** Counts the request; sets the RateLimit headers when admitted, Retry-After when refused. */
  private async admit(principal: Principal, reply: LimitReply): Promise<void> {
    try {
      const decision = await this.limits.check(principal);
      if (decision && decision.remaining !== Number.MAX_SAFE_INTEGER) {
        reply.header('ratelimit-limit', String(decision.limit));
        reply.header('ratelimit-remaining', String(decision.remaining));
      }
    } catch (error) {
      if (error instanceof RateLimitedError) {
        reply.header('retry-after', String(retryAfterSeconds(error.decision)));
      }
      throw error;
    }
  }
}
