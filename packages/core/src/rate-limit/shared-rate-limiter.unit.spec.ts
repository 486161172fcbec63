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

  // A limit under 20 is never leased: these count the compare-and-set's own round trips.
  it('a hit of a key this instance wrote last is one write, no read; a new window starts with a create', async () => {
    const { clock, limiter, trips } = setup(19);
    for (let i = 0; i < 5; i++) expect((await limiter.hit('key-a')).remaining).toBe(19 - i - 1);
    expect(trips()).toEqual({ reads: 0, writes: 5 });
    clock.at += MINUTE;
    expect((await limiter.hit('key-a')).remaining).toBe(18);
    expect(trips()).toEqual({ reads: 0, writes: 6 });
  });

  it('a counter another instance moved costs one refused write and a read, then counts on from its value', async () => {
    const { limiter, second, trips } = setup(19);
    await limiter.hit('key-a');
    await second.hit('key-a'); // second's create is refused: it reads and writes 2
    expect(trips()).toEqual({ reads: 1, writes: 3 });
    expect((await limiter.hit('key-a')).remaining).toBe(16); // refused at the old revision, read, 3
    expect(trips()).toEqual({ reads: 2, writes: 5 });
    // Contended: the next hits read first (a read and a write, no refused write).
    expect((await limiter.hit('key-a')).remaining).toBe(15);
    expect(trips()).toEqual({ reads: 3, writes: 6 });
  });

  it('a busy key is leased: the limit exactly, counted down one by one, in a write per 31 hits at most', async () => {
    const { limiter, trips } = setup(600);
    const decisions = [];
    for (let i = 0; i < 650; i++) decisions.push(await limiter.hit('key-a'));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(600);
    expect(decisions.slice(0, 600).map((d) => d.remaining)).toEqual(
      Array.from({ length: 600 }, (_, i) => 600 - i - 1),
    );
    // Leases of 1, 2, 4, 8, 16, then 30 (a twentieth of the limit), shrinking near the end.
    expect(trips().writes).toBeGreaterThan(20);
    expect(trips().writes).toBeLessThan(40);
    expect(trips().reads).toBe(0);
  });

  it('hits arriving together while a write is out are served from the lease it brings back', async () => {
    const { limiter, trips } = setup(600);
    for (let i = 0; i < 12; i++) await limiter.hit('key-a'); // leases 1, 2, 4: the next write takes 8
    const before = trips().writes;
    const together = await Promise.all(Array.from({ length: 9 }, () => limiter.hit('key-a')));
    expect(together.map((d) => d.remaining)).toEqual(Array.from({ length: 9 }, (_, i) => 587 - i));
    expect(trips().writes - before).toBe(1);
  });

  it('leasing instances never admit more than the limit together, and leave little of it unused', async () => {
    const { limiter, second } = setup(600);
    const decisions = [];
    for (let i = 0; i < 1400; i++) decisions.push(await (i % 3 === 0 ? second : limiter).hit('shared'));
    const admitted = decisions.filter((d) => d.allowed).length;
    expect(admitted).toBeLessThanOrEqual(600);
    // At most a quarter of the room is leased near the end: a few slots, not 2 x 30.
    expect(admitted).toBeGreaterThanOrEqual(595);
    const concurrent = setup(600);
    const racing = await Promise.all(
      Array.from({ length: 1400 }, (_, i) => (i % 2 ? concurrent.limiter : concurrent.second).hit('k')),
    );
    expect(racing.filter((d) => d.allowed).length).toBeLessThanOrEqual(600);
    expect(racing.filter((d) => d.allowed).length).toBeGreaterThanOrEqual(570);
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
