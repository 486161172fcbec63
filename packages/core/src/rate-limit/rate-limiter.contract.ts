import { describe, expect, it } from 'vitest';
import type { RateLimiter, RateLimitPolicy } from './rate-limiter.js';

/** What the contract needs of an adapter: two limiters over the same counters, and a clock it sets. */
export interface RateLimiterUnderTest {
  limiter: RateLimiter;
  /** Another instance (another connection, as another gateway process would have) over the same counters. */
  second: RateLimiter;
  cleanup(): Promise<void>;
}

/** Builds limiters for `policy` reading the time from `now`. */
export type RateLimiterSetup = (policy: RateLimitPolicy, now: () => number) => Promise<RateLimiterUnderTest>;

const MINUTE = 60_000;
/** A window start far from any real "now", so counters of earlier runs never collide. */
const T0 = Math.floor(Date.UTC(2031, 0, 1) / MINUTE) * MINUTE;

/** The rate limiter contract: every adapter must pass all of it. */
export const describeRateLimiterContract = (name: string, setup: RateLimiterSetup): void => {
  const withLimiters =
    (policy: RateLimitPolicy, fn: (t: RateLimiterUnderTest, clock: { at: number }) => Promise<void>) =>
    async () => {
      const clock = { at: T0 + Math.floor(Math.random() * 1_000) * MINUTE };
      const t = await setup(policy, () => clock.at);
      try {
        await fn(t, clock);
      } finally {
        await t.cleanup();
      }
    };

  describe(`rate limiter contract: ${name}`, () => {
    it(
      'admits `limit` requests of a key in a window, then refuses until the window ends',
      withLimiters({ limit: 3, windowMs: MINUTE }, async ({ limiter }, clock) => {
        clock.at += 20_000;
        const decisions = [];
        for (let i = 0; i < 5; i++) decisions.push(await limiter.hit('key-a'));
        expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
        expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
        expect(decisions[3]).toMatchObject({ limit: 3, retryAfterMs: 40_000 });
        clock.at += 39_999;
        expect((await limiter.hit('key-a')).allowed).toBe(false);
        clock.at += 1;
        expect(await limiter.hit('key-a')).toMatchObject({
          allowed: true,
          remaining: 2,
          retryAfterMs: MINUTE,
        });
      }),
    );

    it(
      'counts each key apart',
      withLimiters({ limit: 1, windowMs: MINUTE }, async ({ limiter }) => {
        expect((await limiter.hit('key-a')).allowed).toBe(true);
        expect((await limiter.hit('key-a')).allowed).toBe(false);
        expect((await limiter.hit('key-b')).allowed).toBe(true);
        // Ids with characters a NATS subject or KV key would not take are still distinct keys.
        expect((await limiter.hit('tenant/é key.*')).allowed).toBe(true);
        expect((await limiter.hit('tenant/é key.>')).allowed).toBe(true);
      }),
    );

    it(
      'shares the count between instances: concurrent requests spread over both admit exactly `limit`',
      withLimiters({ limit: 15, windowMs: MINUTE }, async ({ limiter, second }) => {
        const hits = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? limiter : second).hit('shared'));
        const decisions = await Promise.all(hits);
        expect(decisions.filter((d) => d.allowed)).toHaveLength(15);
        expect((await limiter.hit('shared')).allowed).toBe(false);
        expect((await second.hit('shared')).allowed).toBe(false);
      }),
    );

    it(
      'a busy key over both instances: 1,000 racing hits admit at most the limit, and nearly all of it',
      withLimiters({ limit: 400, windowMs: MINUTE }, async ({ limiter, second }) => {
        const hits = Array.from({ length: 1_000 }, (_, i) => (i % 2 === 0 ? limiter : second).hit('busy'));
        const admitted = (await Promise.all(hits)).filter((d) => d.allowed).length;
        expect(admitted).toBeLessThanOrEqual(400);
        // Slots an instance leased and did not use are at most a twentieth of the limit each.
        expect(admitted).toBeGreaterThanOrEqual(360);
      }),
    );

    it(
      'admits everything when the limit is 0 (limiting off)',
      withLimiters({ limit: 0, windowMs: MINUTE }, async ({ limiter }) => {
        const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.hit('key-a')));
        expect(decisions.every((d) => d.allowed)).toBe(true);
      }),
    );
  });
};
