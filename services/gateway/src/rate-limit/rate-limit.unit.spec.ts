import type { RateLimiter } from '@keel/core';
import { InMemoryRateLimiter } from '@keel/core';
import { createLogger } from '@keel/runtime';
import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { problemOf } from '../http/problem.js';
import { rateLimitPolicyFromEnv, tenantRateLimitPolicyFromEnv } from './rate-limit-policy.js';
import { admissionOf, AwaitsRateLimit, RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitedError, RateLimitService } from './rate-limit.service.js';

const silent = createLogger('gateway', { level: 'silent' });
const editor: Principal = { kind: 'tenant', tenantId: 't1', keyId: 'key-1', role: 'editor', userId: 'key-1' };

const httpContext = (
  principal: Principal | undefined,
  headers: Record<string, string>,
  route: { handler?: () => void; request?: object } = {},
): ExecutionContext =>
  ({
    getType: () => 'http',
    getHandler: () => route.handler ?? (() => undefined),
    switchToHttp: () => ({
      getRequest: () => Object.assign(route.request ?? {}, { principal }),
      getResponse: () => ({ header: (name: string, value: string) => (headers[name] = value) }),
    }),
  }) as unknown as ExecutionContext;

describe('rate limits at the HTTP edge', () => {
  it('reads KEEL_RATE_LIMIT_RPM: 600 per minute by default, 0 is off, anything else not a number is refused', () => {
    expect(rateLimitPolicyFromEnv({})).toEqual({ limit: 600, windowMs: 60_000 });
    expect(rateLimitPolicyFromEnv({ KEEL_RATE_LIMIT_RPM: ' 0 ' })).toEqual({ limit: 0, windowMs: 60_000 });
    expect(() => rateLimitPolicyFromEnv({ KEEL_RATE_LIMIT_RPM: '10/s' })).toThrow(/KEEL_RATE_LIMIT_RPM/);
    expect(() => rateLimitPolicyFromEnv({ KEEL_RATE_LIMIT_RPM: '-1' })).toThrow(/KEEL_RATE_LIMIT_RPM/);
  });

  it('answers a key over its limit 429 rate_limited with Retry-After in whole seconds', async () => {
    let now = 90_000; // 30 s before the window ends
    const guard = new RateLimitGuard(
      new RateLimitService(
        { perKey: new InMemoryRateLimiter({ limit: 2, windowMs: 60_000 }, () => now) },
        silent,
      ),
      new Reflector(),
    );
    const headers: Record<string, string> = {};
    expect(await guard.canActivate(httpContext(editor, headers))).toBe(true);
    expect(headers).toMatchObject({ 'ratelimit-limit': '2', 'ratelimit-remaining': '1' });
    await guard.canActivate(httpContext(editor, headers));
    now += 100;
    const refused = await guard.canActivate(httpContext(editor, headers)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(headers['retry-after']).toBe('30');
    expect(problemOf(refused).problem).toMatchObject({ status: 429, code: 'rate_limited' });
    // The probes carry no principal: never counted.
    expect(await guard.canActivate(httpContext(undefined, {}))).toBe(true);
  });

  it('on a route that awaits its answer, admits at once and refuses through admissionOf, before the route acts', async () => {
    class Routes {
      @AwaitsRateLimit()
      send(): void {}
    }
    const guard = new RateLimitGuard(
      new RateLimitService(
        { perKey: new InMemoryRateLimiter({ limit: 1, windowMs: 60_000 }, () => 90_000) },
        silent,
      ),
      new Reflector(),
    );
    const route = (request: object) => ({ handler: Routes.prototype.send, request });
    const [first, second] = [{}, {}];
    const headers: Record<string, string> = {};
    expect(await guard.canActivate(httpContext(editor, headers, route(first)))).toBe(true);
    await admissionOf(first);
    expect(headers).toMatchObject({ 'ratelimit-limit': '1', 'ratelimit-remaining': '0' });
    // Over the limit: the guard lets the route run, and the route's await is the 429.
    expect(await guard.canActivate(httpContext(editor, headers, route(second)))).toBe(true);
    const refused = await admissionOf(second).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect(headers['retry-after']).toBe('30');
    // A request the guard never counted has nothing to wait for.
    await expect(admissionOf({})).resolves.toBeUndefined();
  });

  it('lets the request through when the counters cannot be reached', async () => {
    const broken: RateLimiter = {
      policy: { limit: 1, windowMs: 60_000 },
      hit: () => Promise.reject(new Error('nats down')),
      close: () => Promise.resolve(),
    };
    expect(
      await new RateLimitService({ perKey: broken, perTenant: broken }, silent).check(editor),
    ).toBeUndefined();
  });

  it("counts a tenant's keys together: a second key of an exhausted tenant is refused, another tenant is not", async () => {
    const now = () => 90_000;
    const service = new RateLimitService(
      {
        perKey: new InMemoryRateLimiter({ limit: 10, windowMs: 60_000 }, now),
        perTenant: new InMemoryRateLimiter({ limit: 3, windowMs: 60_000 }, now),
      },
      silent,
    );
    const second: Principal = { ...editor, keyId: 'key-2', userId: 'key-2' };
    const other: Principal = { ...editor, tenantId: 't2', keyId: 'key-3', userId: 'key-3' };
    await service.check(editor);
    await service.check(editor);
    expect(await service.check(second)).toMatchObject({ allowed: true, remaining: 0 });

    const refused = await service.check(second).catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as Error).message).toMatch(/exceeded for this tenant/);
    expect(await service.check(other)).toMatchObject({ allowed: true });
  });

  it('reads KEEL_TENANT_RATE_LIMIT_RPM: 3000 per minute by default, 0 is off', () => {
    expect(tenantRateLimitPolicyFromEnv({})).toEqual({ limit: 3000, windowMs: 60_000 });
    expect(tenantRateLimitPolicyFromEnv({ KEEL_TENANT_RATE_LIMIT_RPM: '0' })).toEqual({
      limit: 0,
      windowMs: 60_000,
    });
    expect(() => tenantRateLimitPolicyFromEnv({ KEEL_TENANT_RATE_LIMIT_RPM: 'many' })).toThrow(
      /KEEL_TENANT_RATE_LIMIT_RPM/,
    );
  });
});
