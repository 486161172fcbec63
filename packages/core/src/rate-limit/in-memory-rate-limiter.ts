import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from './rate-limiter.js';
import { decisionOf, unlimited, windowOf } from './rate-limiter.js';

/**
 * Fixed-window counters in this process's memory: the dev mode (no NATS) and unit tests. Several
 * gateway processes each have their own counters, so the limit is per process here.
 */
export class InMemoryRateLimiter implements RateLimiter {
  readonly #counts = new Map<string, { start: number; count: number }>();

  constructor(
    readonly policy: RateLimitPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  hit(key: string): Promise<RateLimitDecision> {
    if (this.policy.limit <= 0) return Promise.resolve(unlimited(this.policy));
    const { start, remainingMs } = windowOf(this.now(), this.policy.windowMs);
    const current = this.#counts.get(key);
    const count = current?.start === start ? current.count : 0;
    if (count >= this.policy.limit)
      return Promise.resolve(decisionOf(this.policy, false, count, remainingMs));
    this.#counts.set(key, { start, count: count + 1 });
    if (this.#counts.size > 10_000) this.#sweep(start);
    return Promise.resolve(decisionOf(this.policy, true, count + 1, remainingMs));
  }

  close(): Promise<void> {
    this.#counts.clear();
    return Promise.resolve();
  }

  /** Forgets windows that have ended, so idle keys do not accumulate. */
  #sweep(currentStart: number): void {
    for (const [key, value] of this.#counts) if (value.start < currentStart) this.#counts.delete(key);
  }
}
