// Runs the RateLimiter contract on SharedRateLimiter over in-memory versioned counters (two
// instances on one store, so their compare-and-sets really race), then counts its round trips.
import { describe, expect, it } from 'vitest';
import { InMemoryVersionedCounters } from './in-memory-versioned-counters.js';
import { describeRateLimiterContract } from './rate-limiter.contract.js';
import { SharedRateLimiter } from './shared-rate-limiter.js';

describeRateLimiterContract('shared counters in memory', (policy, now) => {
  const counters = new InMemoryVersionedCounters();
  const limiter = new SharedRateLimiter(counters, policy, now);
  const second = new SharedRateLimiter(counters, policy, now);
  return Promise.resolve({
    limiter,
    second,
    cleanup: async () => {
      await limiter.close();
      await second.close();
    },
  });
});

const MINUTE = 60_000;

describe('SharedRateLimiter round trips', () => {
  const setup = (limit: number) => {
    const clock = { at: 1_000 * MINUTE };
    const counters = new InMemoryVersionedCounters();
    const policy = { limit, windowMs: MINUTE };
    const limiter = new SharedRateLimiter(counters, policy, () => clock.at);
    const second = new SharedRateLimiter(counters, policy, () => clock.at);
    const trips = () => ({ reads: counters.reads, writes: counters.writes });
    return { clock, counters, limiter, second, trips };
  };

  it('a hit of a key this instance wrote last is one write, no read; a new window starts with a create', async () => {
    const { clock, limiter, trips } = setup(100);
    for (let i = 0; i < 5; i++) expect((await limiter.hit('key-a')).remaining).toBe(100 - i - 1);
    expect(trips()).toEqual({ reads: 0, writes: 5 });
    clock.at += MINUTE;
    expect((await limiter.hit('key-a')).remaining).toBe(99);
    expect(trips()).toEqual({ reads: 0, writes: 6 });
  });

  it('a counter another instance moved costs one refused write and a read, then counts on from its value', async () => {
    const { limiter, second, trips } = setup(100);
    await limiter.hit('key-a');
    await second.hit('key-a'); // second's create is refused: it reads and writes 2
    expect(trips()).toEqual({ reads: 1, writes: 3 });
    expect((await limiter.hit('key-a')).remaining).toBe(97); // refused at the old revision, read, 3
    expect(trips()).toEqual({ reads: 2, writes: 5 });
    // Contended: the next hits read first (a read and a write, no refused write).
    expect((await limiter.hit('key-a')).remaining).toBe(96);
    expect(trips()).toEqual({ reads: 3, writes: 6 });
  });

  it('a key known full is refused with no round trip until its window ends', async () => {
    const { clock, limiter, trips } = setup(2);
    await limiter.hit('key-a');
    await limiter.hit('key-a');
    const before = trips();
    expect((await limiter.hit('key-a')).allowed).toBe(false);
    expect(trips()).toEqual(before);
    clock.at += MINUTE;
    expect((await limiter.hit('key-a')).allowed).toBe(true);
  });
});
