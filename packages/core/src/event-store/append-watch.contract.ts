import { describe, expect, it } from 'vitest';
import type { EventStore } from './event-store.js';
import type { AppendWatch, CommitNotices } from './sequencing.js';

/** What the append-watch contract needs of an adapter: a store that is also its own append watch. */
export interface AppendWatchUnderTest {
  store: EventStore & AppendWatch & CommitNotices;
  cleanup(): Promise<void>;
}

const LONG_MS = 10_000;

/** The append-watch contract: every store adapter that wakes relays and feeds must pass all of it. */
export const describeAppendWatchContract = (
  name: string,
  setup: () => Promise<AppendWatchUnderTest>,
): void => {
  const withStore = (fn: (t: AppendWatchUnderTest) => Promise<void>) => async () => {
    const t = await setup();
    try {
      await fn(t);
    } finally {
      await t.cleanup();
    }
  };

  describe(`append watch contract: ${name}`, () => {
    it(
      'counts the appends made through this instance',
      withStore(async ({ store }) => {
        const before = store.appendCount;
        await store.append('acme', 'watch-1', [{ type: 'A', data: {} }]);
        await store.append('acme', 'watch-1', [
          { type: 'B', data: {} },
          { type: 'C', data: {} },
        ]);
        expect(store.appendCount).toBe(before + 2);
      }),
    );

    it(
      'wakes a waiter on the next append, long before its timeout',
      withStore(async ({ store }) => {
        const started = Date.now();
        const woken = store.waitForAppend(LONG_MS, undefined, store.appendCount);
        await store.append('acme', 'watch-2', [{ type: 'A', data: {} }]);
        await woken;
        expect(Date.now() - started).toBeLessThan(LONG_MS / 2);
      }),
    );

    it(
      'never misses an append made between the look and the wait: a stale `since` resolves at once',
      withStore(async ({ store }) => {
        const seen = store.appendCount;
        await store.append('acme', 'watch-3', [{ type: 'A', data: {} }]);
        const started = Date.now();
        await store.waitForAppend(LONG_MS, undefined, seen);
        expect(Date.now() - started).toBeLessThan(LONG_MS / 2);
      }),
    );

    it(
      'tells commit listeners each commit of this instance once, with its events, before the append resolves; not a replay',
      withStore(async ({ store }) => {
        const told: string[][] = [];
        const stop = store.onCommitted((events) => told.push(events.map((e) => `${e.type}@${e.version}`)));
        let toldBeforeResolve = false;
        await store
          .append('acme', 'watch-5', [{ type: 'A', data: {} }], {
            commitId: '0192f1c2-0000-7000-8000-00000000c0de',
          })
          .then(() => (toldBeforeResolve = told.length === 1));
        expect(toldBeforeResolve).toBe(true);
        await store.append('acme', 'watch-5', [{ type: 'A', data: {} }], {
          commitId: '0192f1c2-0000-7000-8000-00000000c0de',
        });
        await store.append('acme', 'watch-5', [
          { type: 'B', data: {} },
          { type: 'C', data: {} },
        ]);
        stop();
        await store.append('acme', 'watch-5', [{ type: 'D', data: {} }]);
        expect(told).toEqual([['A@1'], ['B@2', 'C@3']]);
      }),
    );

    it(
      'resolves after the timeout when nothing is appended, and at once on abort',
      withStore(async ({ store }) => {
        let started = Date.now();
        await store.waitForAppend(50, undefined, store.appendCount);
        expect(Date.now() - started).toBeGreaterThanOrEqual(40);
        const abort = new AbortController();
        started = Date.now();
        const waiting = store.waitForAppend(LONG_MS, abort.signal, store.appendCount);
        abort.abort();
        await waiting;
        expect(Date.now() - started).toBeLessThan(LONG_MS / 2);
      }),
    );
  });
};
