/** A counter as stored: its count and the revision a compare-and-set of it must name. */
export interface CounterVersion {
  /** 0: the counter does not exist (a write at 0 creates it). */
  readonly revision: number;
  readonly count: number;
}

/** A counter never written: count 0, and only a create (a write at revision 0) can set it. */
export const ABSENT: CounterVersion = { revision: 0, count: 0 };

/**
 * The store under a SharedRateLimiter: one counter per key and fixed window, changed only by
 * compare-and-set, so two instances that wrote at the same revision cannot both succeed. A
 * JetStream KV bucket across gateway processes; memory in unit tests.
 */
export interface VersionedCounters {
  /** The counter of `key` in the window starting at `windowStart`, as stored now. */
  read(key: string, windowStart: number): Promise<CounterVersion>;
  /**
   * Sets the counter to `count` if its revision is still `expected` (0: it must not exist yet);
   * resolves the new revision, or undefined when another writer moved it first.
   */
  write(key: string, windowStart: number, count: number, expected: number): Promise<number | undefined>;
}
