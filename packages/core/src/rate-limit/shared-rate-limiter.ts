import { UnavailableError } from '../errors/index.js';
import { sleep } from '../time/index.js';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from './rate-limiter.js';
import { decisionOf, unlimited, windowOf } from './rate-limiter.js';
import type { CounterVersion, VersionedCounters } from './versioned-counters.js';
import { ABSENT } from './versioned-counters.js';

/** Compare-and-set rounds lost to other instances before a hit gives up as unavailable. */
const MAX_ATTEMPTS = 50;
/** After a write at a remembered revision is refused, the counter's next writes read first. */
const READS_FIRST_AFTER_REFUSAL = 8;
/**
 * The most of a limit one instance may hold as a lease (slots counted in the shared counter, not
 * yet given to a request): also the most a window can leave unused per instance and counter.
 */
const LEASE_SHARE = 1 / 20;

interface Waiter {
  remainingMs: number;
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

/**
 * What this process last knew of one counter, how many of its next writes should read first, and
 * its lease: `leased` slots of the count it may still admit without a round trip, `lease` the size
 * of the last one taken.
 */
interface Known extends CounterVersion {
  start: number;
  readsFirst: number;
  leased: number;
  lease: number;
}

/**
 * Fixed-window counters shared by every instance over the same VersionedCounters, admitted only by
 * compare-and-set: a count is written at the revision it was computed from, so two instances never
 * both take the last slot (no over-admission, whatever this process remembers).
 *
 * A hit is one round trip when this process wrote the counter last: the write is tried at the
 * revision and count it remembers (a counter it never saw, at revision 0: a create). When another
 * instance moved the counter first, the write is refused and nothing is counted; the counter is
 * then read and written again, and its next few writes read first (another instance is writing
 * it too, so what is remembered is likely stale). Hits of one counter arriving together here are
 * folded into one write of +n, so contention is between instances only. A counter remembered full
 * refuses locally until its window ends (a count never decreases within a window).
 *
 * A busy counter is leased: each write also takes a few slots more than its hits need, which the
 * next hits here admit with no round trip. The lease doubles while the hits keep coming (1, 2, 4,
 * ... up to LEASE_SHARE of the limit) and shrinks near the limit (at most a quarter of the room
 * left), so it never admits more than the limit; the price is that slots leased and unused when
 * the window ends are lost to the other instances (at most LEASE_SHARE of the limit per instance,
 * far less near the limit). A limit under 1 / LEASE_SHARE is never leased: exact.
 */
export class SharedRateLimiter implements RateLimiter {
  readonly #queues = new Map<string, Waiter[]>();
  readonly #known = new Map<string, Known>();
  /** The window the remembered counters were last swept at. */
  #sweptAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(
    private readonly counters: VersionedCounters,
    readonly policy: RateLimitPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  hit(key: string): Promise<RateLimitDecision> {
    if (this.policy.limit <= 0) return Promise.resolve(unlimited(this.policy));
    if (this.#closed) return Promise.reject(new UnavailableError('the rate limiter is closed'));
    const { start, remainingMs } = windowOf(this.now(), this.policy.windowMs);
    if (start > this.#sweptAt) this.#sweep(start);
    const id = `${start}:${key}`;
    const known = this.#known.get(id);
    if (known && known.leased > 0 && !this.#queues.has(id)) {
      known.leased--;
      return Promise.resolve(decisionOf(this.policy, true, known.count - known.leased, remainingMs));
    }
    if ((known?.count ?? 0) >= this.policy.limit) {
      return Promise.resolve(decisionOf(this.policy, false, this.policy.limit, remainingMs));
    }
    return new Promise<RateLimitDecision>((resolve, reject) => {
      const queue = this.#queues.get(id);
      if (queue) {
        queue.push({ remainingMs, resolve, reject });
        return;
      }
      this.#queues.set(id, [{ remainingMs, resolve, reject }]);
      void this.#drain(id, key, start);
    });
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  /** Answers the waiters of one counter a batch at a time until none are left. */
  async #drain(id: string, key: string, start: number): Promise<void> {
    const queue = this.#queues.get(id)!;
    while (queue.length > 0) {
      const batch = this.#fromLease(id, queue.splice(0));
      if (batch.length === 0) continue;
      try {
        const { before, admitted } = await this.#admit(id, key, start, batch.length);
        batch.forEach((waiter, i) => {
          const allowed = i < admitted;
          const count = allowed ? before + i + 1 : this.policy.limit;
          waiter.resolve(decisionOf(this.policy, allowed, count, waiter.remainingMs));
        });
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
    }
    this.#queues.delete(id);
  }

  /** Admits waiters from the counter's lease while it lasts; the rest, to be written for. */
  #fromLease(id: string, waiters: Waiter[]): Waiter[] {
    const known = this.#known.get(id);
    if (!known || known.leased === 0) return waiters;
    const served = waiters.splice(0, known.leased);
    known.leased -= served.length;
    served.forEach((waiter, i) => {
      const count = known.count - known.leased - (served.length - i - 1);
      waiter.resolve(decisionOf(this.policy, true, count, waiter.remainingMs));
    });
    return waiters;
  }

  /** The slots a write wanting `wanted` takes on top of them, from what it is computed at. */
  #leaseFor(known: Known | undefined, current: CounterVersion, wanted: number): number {
    const room = this.policy.limit - current.count - wanted;
    const next = Math.max(1, 2 * (known?.lease ?? 0));
    return Math.max(0, Math.min(Math.floor(this.policy.limit * LEASE_SHARE), next, Math.floor(room / 4)));
  }

  /**
   * Adds up to `wanted` (and a lease) to the counter by compare-and-set; says how many of the
   * wanted fit and the count before.
   */
  async #admit(
    id: string,
    key: string,
    start: number,
    wanted: number,
  ): Promise<{ before: number; admitted: number }> {
    const known = this.#known.get(id);
    let readsFirst = known?.readsFirst ?? 0;
    // What the write is tried at without reading: undefined once a read is due.
    let guess: CounterVersion | undefined = readsFirst > 0 ? undefined : (known ?? ABSENT);
    if (readsFirst > 0) readsFirst--;
    for (let attempt = 1; ; attempt++) {
      const current = guess ?? (await this.counters.read(key, start));
      const admitted = Math.min(wanted, Math.max(0, this.policy.limit - current.count));
      if (admitted === 0) {
        this.#known.set(id, { ...current, start, readsFirst, leased: 0, lease: 0 });
        return { before: current.count, admitted };
      }
      const lease = this.#leaseFor(known, current, admitted);
      const count = current.count + admitted + lease;
      const revision = await this.counters.write(key, start, count, current.revision);
      if (revision !== undefined) {
        this.#known.set(id, { revision, count, start, readsFirst, leased: lease, lease });
        return { before: current.count, admitted };
      }
      if (attempt >= MAX_ATTEMPTS) throw new UnavailableError('rate-limit counter too contended');
      // Another instance wrote first. A refused guess reads at once; a refused read backs off a little.
      if (guess) readsFirst = READS_FIRST_AFTER_REFUSAL;
      else await sleep(Math.random() * Math.min(attempt, 10));
      guess = undefined;
    }
  }

  /** Forgets the counters of windows before `start` (they are never written again). */
  #sweep(start: number): void {
    for (const [id, known] of this.#known) if (known.start < start) this.#known.delete(id);
    this.#sweptAt = start;
  }
}
