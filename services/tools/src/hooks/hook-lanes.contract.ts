import { describe, expect, it } from 'vitest';
import type { HookLaneStore, LaneKey } from './hook-lanes.js';
import { laneId } from './hook-lanes.js';

let counter = 0;
const freshKey = (): LaneKey => ({
  tenantId: 'acme',
  hook: `audit-${++counter}-${Date.now()}`,
  streamName: 'conversation-c1',
});

/**
 * The hook lane store contract: every adapter must pass all of it. `setup` gives a store and a
 * second instance over the same data (another process's).
 */
export const describeHookLaneContract = (
  name: string,
  setup: () => Promise<{ lanes: HookLaneStore; second: HookLaneStore }>,
): void => {
  describe(`hook lane store contract: ${name}`, () => {
    const mine = <T extends { id: string }>(claimed: T[], key: LaneKey) =>
      claimed.filter((lane) => lane.id === laneId(key));

    it('a first touch opens the lane just before its event; later touches raise the target only', async () => {
      const { lanes } = await setup();
      const key = freshKey();
      await lanes.touch(key, 5);
      await lanes.touch(key, 9);
      await lanes.touch(key, 7);
      const [lane] = mine(await lanes.claim('p1', 1_000, 500, 100), key);
      expect(lane).toMatchObject({ ...key, cursor: 4, target: 9, attempts: 0, retryAt: 0 });
    });

    it('a leased lane is not claimed by another owner until its lease runs out', async () => {
      const { lanes, second } = await setup();
      const key = freshKey();
      await lanes.touch(key, 1);
      expect(mine(await lanes.claim('p1', 1_000, 500, 100), key)).toHaveLength(1);
      expect(mine(await second.claim('p2', 1_400, 500, 100), key)).toHaveLength(0);
      // p1 died: after its lease, p2 takes the lane and p1 can no longer move it.
      expect(mine(await second.claim('p2', 1_600, 500, 100), key)).toHaveLength(1);
      expect(await lanes.advance(laneId(key), 'p1', 1)).toBe(false);
      expect(await second.advance(laneId(key), 'p2', 1)).toBe(true);
    });

    it('a lane caught up is not claimed; a touch past the cursor makes it due again', async () => {
      const { lanes } = await setup();
      const key = freshKey();
      await lanes.touch(key, 3);
      await lanes.claim('p1', 1_000, 500, 100);
      expect(await lanes.advance(laneId(key), 'p1', 3)).toBe(true);
      await lanes.release(laneId(key), 'p1');
      expect(mine(await lanes.claim('p1', 1_000, 500, 100), key)).toHaveLength(0);
      await lanes.touch(key, 4);
      expect(mine(await lanes.claim('p1', 1_000, 500, 100), key)).toMatchObject([{ cursor: 3, target: 4 }]);
    });

    it('a failed attempt keeps the lane back until its retry time, with its attempts counted', async () => {
      const { lanes } = await setup();
      const key = freshKey();
      await lanes.touch(key, 2);
      await lanes.claim('p1', 1_000, 500, 100);
      expect(await lanes.failed(laneId(key), 'p1', 1, 1, 3_000)).toBe(true);
      await lanes.release(laneId(key), 'p1');
      expect(mine(await lanes.claim('p1', 2_999, 500, 100), key)).toHaveLength(0);
      expect(mine(await lanes.claim('p1', 3_000, 500, 100), key)).toMatchObject([
        { cursor: 1, attempts: 1, retryAt: 3_000 },
      ]);
      // Settled: attempts start again for the next event.
      await lanes.advance(laneId(key), 'p1', 2);
      await lanes.touch(key, 3);
      await lanes.release(laneId(key), 'p1');
      expect(mine(await lanes.claim('p1', 3_000, 500, 100), key)).toMatchObject([{ cursor: 2, attempts: 0 }]);
    });

    it('an event touched while the holder renews or gives back its lease is not lost', async () => {
      // The consumer touches while a worker holds the lane (its hook slow to answer): 20 lanes, each
      // touched beside a renewal and beside a release; a store where either write undoes the other
      // (FerretDB updates are read, modify, write back) finds the lane done and never sends the event.
      const { lanes, second } = await setup();
      const keys = Array.from({ length: 20 }, freshKey);
      for (const key of keys) await lanes.touch(key, 1);
      await lanes.claim('p1', 1_000, 500, 100);
      await Promise.all(
        keys.map((key) => Promise.all([lanes.renew(laneId(key), 'p1', 1_400), second.touch(key, 2)])),
      );
      for (const key of keys) expect(await lanes.advance(laneId(key), 'p1', 1)).toBe(true);
      await Promise.all(
        keys.map((key) => Promise.all([lanes.release(laneId(key), 'p1'), second.touch(key, 3)])),
      );
      const claimed = await lanes.claim('p1', 2_000, 500, 100);
      for (const key of keys) expect(mine(claimed, key)).toMatchObject([{ cursor: 1, target: 3 }]);
    });

    it('a renewed lease holds the lane past its first end', async () => {
      const { lanes, second } = await setup();
      const key = freshKey();
      await lanes.touch(key, 1);
      await lanes.claim('p1', 1_000, 500, 100);
      expect(await lanes.renew(laneId(key), 'p1', 2_000)).toBe(true);
      expect(mine(await second.claim('p2', 1_800, 500, 100), key)).toHaveLength(0);
      expect(await second.renew(laneId(key), 'p2', 9_000)).toBe(false);
    });
  });
};
