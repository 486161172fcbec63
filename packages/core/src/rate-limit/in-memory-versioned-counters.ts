import type { CounterVersion, VersionedCounters } from './versioned-counters.js';
import { ABSENT } from './versioned-counters.js';

/**
 * VersionedCounters in memory for unit tests: revisions are one sequence over all counters (as a
 * stream's), each call answers after a turn of the event loop so concurrent callers interleave,
 * and the calls are counted (a call is a round trip to the real store).
 */
export class InMemoryVersionedCounters implements VersionedCounters {
  readonly #counters = new Map<string, CounterVersion>();
  #sequence = 0;
  reads = 0;
  writes = 0;

  async read(key: string, windowStart: number): Promise<CounterVersion> {
    this.reads++;
    await new Promise((resolve) => setImmediate(resolve));
    return this.#counters.get(`${windowStart}:${key}`) ?? ABSENT;
  }

  async write(
    key: string,
    windowStart: number,
    count: number,
    expected: number,
  ): Promise<number | undefined> {
    this.writes++;
    await new Promise((resolve) => setImmediate(resolve));
    const name = `${windowStart}:${key}`;
    if ((this.#counters.get(name) ?? ABSENT).revision !== expected) return undefined;
    const revision = ++this.#sequence;
    this.#counters.set(name, { revision, count });
    return revision;
  }
}
