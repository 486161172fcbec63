import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../errors/index.js';
import { uuidv7 } from '../typing/index.js';
import type { DeadLetter, DeadLetterStore, Inbox } from './event-bus.js';
import { event, unique } from './event-bus.contract-support.js';

/** Fresh Inbox and DeadLetterStore instances for one test. */
export interface BusStoresUnderTest {
  inbox: Inbox;
  deadLetters: DeadLetterStore;
  cleanup(): Promise<void>;
}

const deadLetter = (consumer: string, tenantId: string, deadAt: string): DeadLetter => ({
  id: uuidv7(),
  consumer,
  tenantId,
  event: event(tenantId, 'order-a', 1, { 'a.b': { $in: [1, 'ü'] }, big: 2 ** 53 - 1, nested: [[{}]] }),
  error: 'boom',
  deliveryCount: 5,
  deadAt,
});

/** The behaviour every Inbox and DeadLetterStore adapter (memory, MongoDB) must have. */
export const describeBusStoresContract = (name: string, factory: () => Promise<BusStoresUnderTest>): void => {
  describe(`bus stores contract: ${name}`, () => {
    let stores: BusStoresUnderTest;
    beforeEach(async () => {
      stores = await factory();
    });
    afterEach(async () => {
      await stores.cleanup();
    });

    it('remembers handled events per consumer, and recording twice is harmless', async () => {
      const [c1, c2, id] = [unique('c'), unique('c'), uuidv7()];
      expect(await stores.inbox.has(c1, id)).toBe(false);
      await stores.inbox.record(c1, id);
      await stores.inbox.record(c1, id);
      expect(await stores.inbox.has(c1, id)).toBe(true);
      expect(await stores.inbox.has(c2, id)).toBe(false);
      expect(await stores.inbox.has(c1, uuidv7())).toBe(false);
    });

    it('lists dead letters oldest first, by consumer and tenant, replayed ones on request, up to a limit', async () => {
      const [c1, c2, t1, t2] = [unique('c'), unique('c'), unique('t'), unique('t')];
      const at = (s: number): string => new Date(Date.UTC(2030, 0, 1, 0, 0, s)).toISOString();
      const a = deadLetter(c1, t1, at(3));
      const b = deadLetter(c1, t2, at(1));
      const c = deadLetter(c2, t1, at(2));
      for (const d of [a, b, c]) await stores.deadLetters.record(d);
      expect(await stores.deadLetters.get(a.id)).toEqual(a);
      expect(await stores.deadLetters.list({ consumer: c1 })).toEqual([b, a]);
      expect(await stores.deadLetters.list({ tenantId: t1 })).toEqual([c, a]);
      expect(await stores.deadLetters.list({ consumer: c1, tenantId: t1 })).toEqual([a]);
      expect(await stores.deadLetters.list({ consumer: c1, limit: 1 })).toEqual([b]);

      await stores.deadLetters.markReplayed(b.id, at(9));
      expect(await stores.deadLetters.list({ consumer: c1 })).toEqual([a]);
      expect(await stores.deadLetters.list({ consumer: c1, includeReplayed: true })).toEqual([
        { ...b, replayedAt: at(9) },
        a,
      ]);
      await expect(stores.deadLetters.markReplayed(uuidv7(), at(9))).rejects.toBeInstanceOf(NotFoundError);
      expect(await stores.deadLetters.get(uuidv7())).toBeUndefined();
    });

    it('replaces a dead letter recorded again under its id (a replay that failed again)', async () => {
      const first = deadLetter(unique('c'), unique('t'), new Date().toISOString());
      await stores.deadLetters.record(first);
      await stores.deadLetters.markReplayed(first.id, new Date().toISOString());
      const again = {
        ...first,
        error: 'boom again',
        deliveryCount: 3,
        deadAt: new Date(Date.now() + 1).toISOString(),
      };
      await stores.deadLetters.record(again);
      expect(await stores.deadLetters.list({ consumer: first.consumer, includeReplayed: true })).toEqual([
        again,
      ]);
    });
  });
};
