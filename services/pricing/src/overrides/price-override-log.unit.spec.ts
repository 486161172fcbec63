import type { EventStore } from '@keel/core';
import { InMemoryEventBus, InMemoryEventStore, WatchedStreams } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { PriceSet } from './price-events.js';
import { PriceOverrideLog } from './price-override-log.js';
import { PriceTimeline } from './price-timeline.js';

const priceSet = (key: string, input: number, effectiveFrom: string): PriceSet => ({
  type: 'PriceSet',
  data: {
    key,
    model: key,
    inputUsdPerMtok: input,
    outputUsdPerMtok: input * 4,
    contextWindowTokens: 0,
    effectiveFrom,
    setAt: '2026-01-01T00:00:00.000Z',
  },
});

describe('PriceTimeline', () => {
  const at = (iso: string) => Date.parse(iso);

  it('answers the override in force at an instant: none before the first, each period from its start', () => {
    const timeline = new PriceTimeline();
    timeline.apply(priceSet('openai:gpt-4o', 3, '2026-02-01T00:00:00Z'), 2);
    timeline.apply(priceSet('openai:gpt-4o', 2, '2026-01-01T00:00:00Z'), 1);
    expect(timeline.priceAt('openai:gpt-4o', at('2025-12-31T23:59:59.999Z'))).toBeUndefined();
    expect(timeline.priceAt('openai:gpt-4o', at('2026-01-01T00:00:00Z'))?.inputUsdPerMtok).toBe(2);
    expect(timeline.priceAt('openai:gpt-4o', at('2026-01-31T23:59:59Z'))?.inputUsdPerMtok).toBe(2);
    expect(timeline.priceAt('openai:gpt-4o', at('2026-02-01T00:00:00Z'))?.inputUsdPerMtok).toBe(3);
    expect(timeline.priceAt('openai:gpt-4o-mini', at('2026-03-01T00:00:00Z'))).toBeUndefined();
    expect(timeline.history('openai:gpt-4o').map((p) => p.inputUsdPerMtok)).toEqual([2, 3]);
  });

  it('of two overrides from the same instant, the later one in the stream wins', () => {
    const timeline = new PriceTimeline();
    timeline.apply(priceSet('openai:gpt-4o', 7, '2026-01-01T00:00:00Z'), 1);
    timeline.apply(priceSet('openai:gpt-4o', 8, '2026-01-01T00:00:00Z'), 2);
    expect(timeline.priceAt('openai:gpt-4o', at('2026-06-01T00:00:00Z'))?.inputUsdPerMtok).toBe(8);
  });
});

/** An EventStore that counts the reads of the override stream. */
const countingStore = () => {
  const inner = new InMemoryEventStore();
  let reads = 0;
  const store = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'read') {
        return (...args: Parameters<EventStore['read']>) => {
          reads++;
          return target.read(...args);
        };
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
  return { store, inner, reads: () => reads };
};

describe('PriceOverrideLog freshness', () => {
  it('reads again for a question about an instant after its last read started, not for an earlier one', async () => {
    const { store, reads } = countingStore();
    let now = 1_000;
    const log = new PriceOverrideLog(store, () => now);
    await log.freshFor(now);
    expect(reads()).toBe(1);
    now = 2_000;
    await log.freshFor(500); // before the last read started: known already
    expect(reads()).toBe(1);
    await log.freshFor(1_000); // the read started at 1000 may have missed an append in that same ms
    expect(reads()).toBe(2);
  });

  it('shares one read among concurrent questions that it is fresh enough for', async () => {
    const { store, reads } = countingStore();
    let now = 1_000;
    const log = new PriceOverrideLog(store, () => now);
    await log.freshFor(now);
    now = 2_000;
    await Promise.all([log.freshFor(1_500), log.freshFor(1_600), log.freshFor(1_999)]);
    expect(reads()).toBe(2);
  });

  it('sees an override appended by another instance at the next question', async () => {
    const { store } = countingStore();
    let now = Date.parse('2026-01-01T00:00:00Z');
    const a = new PriceOverrideLog(store, () => now);
    const b = new PriceOverrideLog(store, () => now);
    await b.freshFor(now);
    now += 10;
    await a.append(priceSet('openai:gpt-4o', 9, new Date(now).toISOString()), {});
    await b.freshFor(now);
    expect(b.timeline.priceAt('openai:gpt-4o', now)?.inputUsdPerMtok).toBe(9);
    expect(b.version).toBe(1);
  });
});

describe('PriceOverrideLog with the bus watch', () => {
  it("answers without a read while the watch vouches for its fold, and reads once another instance's override arrives on the bus", async () => {
    const { store, inner, reads } = countingStore();
    const bus = new InMemoryEventBus();
    // Every commit on the bus as it is made (the relay's fast path).
    inner.onCommitted((events) => void bus.publish([...events]));
    let now = Date.parse('2026-01-01T00:00:00Z');
    const instance = () =>
      new PriceOverrideLog(store, () => now, {
        watched: new WatchedStreams(bus, { now: () => now, maxAgeMs: 5_000 }),
        bus,
      });
    const [a, b] = [instance(), instance()];
    a.listen();
    b.listen();
    await b.freshFor(now);
    expect(reads()).toBe(1);
    now += 1_000;
    await Promise.all([b.freshFor(now), b.freshFor(now + 60_000)]);
    expect(reads()).toBe(1);

    // SetPrice on `a` answers once its own watch has the override back from the bus.
    await a.append(priceSet('openai:gpt-4o', 9, new Date(now).toISOString()), {});
    const afterAppend = reads();
    await b.freshFor(now);
    expect(reads()).toBe(afterAppend + 1);
    expect(b.timeline.priceAt('openai:gpt-4o', now)?.inputUsdPerMtok).toBe(9);
    await b.freshFor(now);
    expect(reads()).toBe(afterAppend + 1);

    // A watch vouches for at most its max age (a publish missed while NATS was down).
    now += 5_000;
    await b.freshFor(now);
    expect(reads()).toBe(afterAppend + 2);
    a.close();
    b.close();
    await bus.close();
  });
});
