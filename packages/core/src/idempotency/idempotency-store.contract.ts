import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { uuidv7 } from '../typing/index.js';
import type { IdempotencyStore } from './idempotency-store.js';

/** A fresh IdempotencyStore for one test, on a clock the test moves. */
export interface IdempotencyStoreUnderTest {
  store: IdempotencyStore;
  /** Moves the store's clock forward. */
  advance(ms: number): void;
  /** The store's clock. */
  now(): number;
  cleanup(): Promise<void>;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** The behaviour every IdempotencyStore adapter (memory, MongoDB) must have. */
export const describeIdempotencyStoreContract = (
  name: string,
  factory: () => Promise<IdempotencyStoreUnderTest>,
): void => {
  describe(`idempotency store contract: ${name}`, () => {
    let under: IdempotencyStoreUnderTest;
    beforeEach(async () => {
      under = await factory();
    });
    afterEach(async () => {
      await under.cleanup();
    });

    it('lets the first request claim a key, tells a retry it is pending, then returns the recorded response', async () => {
      const { store } = under;
      const key = `t1|POST /v1/x|${uuidv7()}`;
      const first = await store.claim(key, 'fp-1', MINUTE);
      expect(first.outcome).toBe('claimed');
      expect(await store.claim(key, 'fp-2', MINUTE)).toEqual({ outcome: 'pending', fingerprint: 'fp-1' });
      // Bodies MongoDB could not hold as a document (dotted and $ keys) come back unchanged.
      const response = { status: 201, body: { id: 'c1', 'a.b': { $in: [1, 'ü'] }, none: null } };
      await store.complete(key, (first as { claimId: string }).claimId, response, DAY);
      expect(await store.claim(key, 'fp-1', MINUTE)).toEqual({
        outcome: 'done',
        fingerprint: 'fp-1',
        response,
      });
      expect(await store.claim(key, 'fp-other', MINUTE)).toEqual({
        outcome: 'done',
        fingerprint: 'fp-1',
        response,
      });
    });

    it('frees a released key for the next request, and keys do not share entries', async () => {
      const { store } = under;
      const key = uuidv7();
      const first = await store.claim(key, 'fp', MINUTE);
      expect((await store.claim(`${key}-other`, 'fp', MINUTE)).outcome).toBe('claimed');
      await store.release(key, (first as { claimId: string }).claimId);
      expect((await store.claim(key, 'fp', MINUTE)).outcome).toBe('claimed');
    });

    it('treats an expired entry as absent: a crashed request after pendingMs, a response after its ttl', async () => {
      const { store } = under;
      const crashed = uuidv7();
      const stale = await store.claim(crashed, 'fp', MINUTE);
      under.advance(MINUTE + 1);
      const fresh = await store.claim(crashed, 'fp', MINUTE);
      expect(fresh.outcome).toBe('claimed');
      // The crashed request's late completion does not overwrite the new claim.
      await store.complete(crashed, (stale as { claimId: string }).claimId, { late: true }, DAY);
      await store.release(crashed, (stale as { claimId: string }).claimId);
      expect(await store.claim(crashed, 'fp', MINUTE)).toEqual({ outcome: 'pending', fingerprint: 'fp' });

      const done = uuidv7();
      const claim = await store.claim(done, 'fp', MINUTE);
      await store.complete(done, (claim as { claimId: string }).claimId, { ok: 1 }, DAY);
      under.advance(DAY - MINUTE);
      expect((await store.claim(done, 'fp', MINUTE)).outcome).toBe('done');
      under.advance(MINUTE + 1);
      expect((await store.claim(done, 'fp-2', MINUTE)).outcome).toBe('claimed');
    });

    it('purges the entries expired before a date, and only those', async () => {
      const { store } = under;
      const [old, fresh] = [uuidv7(), uuidv7()];
      const first = await store.claim(old, 'fp', MINUTE);
      await store.complete(old, (first as { claimId: string }).claimId, { ok: 1 }, MINUTE);
      under.advance(2 * MINUTE);
      await store.claim(fresh, 'fp', MINUTE);
      expect(await store.purgeExpired(new Date(under.now()))).toBe(1);
      expect(await store.claim(fresh, 'fp', MINUTE)).toEqual({ outcome: 'pending', fingerprint: 'fp' });
      expect((await store.claim(old, 'fp-new', MINUTE)).outcome).toBe('claimed');
    });

    it('gives a key to exactly one of many concurrent claims', async () => {
      const { store } = under;
      const key = uuidv7();
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) => store.claim(key, `fp-${i}`, MINUTE)),
      );
      const won = claims.filter((c) => c.outcome === 'claimed');
      expect(won).toHaveLength(1);
      const winner = claims.indexOf(won[0]!);
      for (const claim of claims.filter((c) => c.outcome !== 'claimed')) {
        expect(claim).toEqual({ outcome: 'pending', fingerprint: `fp-${winner}` });
      }
    });

    it('gives an expired key to exactly one of many concurrent claims, round after round', async () => {
      const { store } = under;
      const wins: number[] = [];
      for (let round = 0; round < 80; round++) {
        const key = uuidv7();
        await store.claim(key, 'crashed', MINUTE);
        under.advance(MINUTE + 1);
        const claims = await Promise.allSettled(
          Array.from({ length: 12 }, (_, i) => store.claim(key, `fp-${i}`, MINUTE)),
        );
        wins.push(claims.filter((c) => c.status === 'fulfilled' && c.value.outcome === 'claimed').length);
      }
      // Two winners would both do the request's work.
      expect(wins.filter((n) => n !== 1)).toEqual([]);
    });
  });
};
