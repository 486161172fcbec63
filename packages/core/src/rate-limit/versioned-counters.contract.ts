import { describe, expect, it } from 'vitest';
import type { VersionedCounters } from './versioned-counters.js';
import { ABSENT } from './versioned-counters.js';

/** Builds a fresh store of counters, and what releases it. */
export type VersionedCountersSetup = () => Promise<{ counters: VersionedCounters; cleanup(): Promise<void> }>;

/** A window start no real clock produces, so counters of earlier runs never collide. */
const WINDOW = Date.UTC(2031, 0, 1);

/** The VersionedCounters contract: every adapter must pass all of it. */
export const describeVersionedCountersContract = (name: string, setup: VersionedCountersSetup): void => {
  const withCounters = (fn: (counters: VersionedCounters) => Promise<void>) => async () => {
    const { counters, cleanup } = await setup();
    try {
      await fn(counters);
    } finally {
      await cleanup();
    }
  };

  describe(`versioned counters contract: ${name}`, () => {
    it(
      'a counter never written reads as absent; a write at revision 0 creates it, a second one is refused',
      withCounters(async (counters) => {
        expect(await counters.read('key-a', WINDOW)).toEqual(ABSENT);
        const revision = await counters.write('key-a', WINDOW, 3, 0);
        expect(revision).toBeGreaterThan(0);
        expect(await counters.read('key-a', WINDOW)).toEqual({ revision, count: 3 });
        expect(await counters.write('key-a', WINDOW, 1, 0)).toBeUndefined();
        expect(await counters.read('key-a', WINDOW)).toEqual({ revision, count: 3 });
      }),
    );

    it(
      'a write names the revision it was computed from: at a stale one it is refused and changes nothing',
      withCounters(async (counters) => {
        const first = (await counters.write('key-a', WINDOW, 1, 0))!;
        const second = (await counters.write('key-a', WINDOW, 2, first))!;
        expect(second).toBeGreaterThan(first);
        expect(await counters.write('key-a', WINDOW, 5, first)).toBeUndefined();
        expect(await counters.read('key-a', WINDOW)).toEqual({ revision: second, count: 2 });
      }),
    );

    it(
      'keys and windows are counters apart, whatever characters the key holds',
      withCounters(async (counters) => {
        for (const key of ['key-a', 'key-b', 'tenant/é key.*', 'tenant/é key.>']) {
          expect(await counters.write(key, WINDOW, 1, 0)).toBeGreaterThan(0);
        }
        expect(await counters.write('key-a', WINDOW + 60_000, 1, 0)).toBeGreaterThan(0);
        expect((await counters.read('tenant/é key.>', WINDOW)).count).toBe(1);
      }),
    );
  });
};
