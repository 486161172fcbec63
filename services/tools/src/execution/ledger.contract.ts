import { NotFoundError, ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { ToolCallLedger } from './ledger.js';
import type { ToolOutcome } from './types.js';

/** What the contract needs of an adapter: a fresh ledger, and a second instance over the same data. */
export interface LedgerUnderTest {
  ledger: ToolCallLedger;
  /** Another instance (another connection, as another process would have) over the same data. */
  second: ToolCallLedger;
  cleanup(): Promise<void>;
}

const meta = { conversationId: 'conv-1', name: 'get_weather' };
const success = (result: unknown): ToolOutcome => ({ ok: true, result, attempts: 1, durationMs: 12 });
const failure: ToolOutcome = {
  ok: false,
  error: { code: 'webhook_status_500', message: 'the webhook answered 500 (3 attempts)' },
  attempts: 3,
  durationMs: 900,
};

let counter = 0;
const key = (tenantId = 'acme') => ({ tenantId, toolCallId: `call_${++counter}_${Date.now()}` });

/** The tool-call ledger contract: every adapter must pass all of it. */
export const describeLedgerContract = (name: string, setup: () => Promise<LedgerUnderTest>): void => {
  const withLedger = (fn: (t: LedgerUnderTest) => Promise<void>) => async () => {
    const t = await setup();
    try {
      await fn(t);
    } finally {
      await t.cleanup();
    }
  };

  describe(`tool-call ledger contract: ${name}`, () => {
    it(
      'the first begin is new and in flight; a later begin sees it in flight',
      withLedger(async ({ ledger }) => {
        const k = key();
        const first = await ledger.begin(k, meta);
        expect(first.state).toBe('new');
        expect(first.record).toMatchObject({ ...k, ...meta, state: 'in-flight' });
        expect(first.record.createdAt).toBeInstanceOf(Date);
        expect(first.record.outcome).toBeUndefined();
        const again = await ledger.begin(k, { conversationId: 'conv-other', name: 'other' });
        expect(again.state).toBe('in-flight');
        expect(again.record).toEqual(first.record);
        expect(await ledger.get(k)).toEqual(first.record);
      }),
    );

    it(
      '20 concurrent begins of one key (two instances): exactly one is new',
      withLedger(async ({ ledger, second }) => {
        const k = key();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? ledger : second).begin(k, meta)),
        );
        expect(results.filter((r) => r.state === 'new')).toHaveLength(1);
        expect(results.filter((r) => r.state === 'in-flight')).toHaveLength(19);
        expect((await second.get(k))?.state).toBe('in-flight');
      }),
    );

    it(
      'complete records the outcome; a begin after it returns the completed record',
      withLedger(async ({ ledger, second }) => {
        const k = key();
        await ledger.begin(k, meta);
        const result = { temperature: 21.5, 'a.b': { $x: [1, null, 'é'] }, big: 1e300, tiny: -5e-324 };
        const stored = await ledger.complete(k, success(result));
        expect(stored).toMatchObject({ ...k, ...meta, state: 'completed', outcome: success(result) });
        expect(stored.completedAt).toBeInstanceOf(Date);
        const later = await second.begin(k, meta);
        expect(later.state).toBe('completed');
        expect(later.record.outcome).toEqual(success(result));
        expect((await second.get(k))?.outcome).toEqual(success(result));
      }),
    );

    it(
      'completing twice keeps the first outcome',
      withLedger(async ({ ledger, second }) => {
        const k = key();
        await ledger.begin(k, meta);
        await ledger.complete(k, failure);
        const again = await second.complete(k, success({ late: true }));
        expect(again.outcome).toEqual(failure);
        expect((await ledger.get(k))?.outcome).toEqual(failure);
      }),
    );

    it(
      'concurrent completes of one call (two instances): all see the same single outcome',
      withLedger(async ({ ledger, second }) => {
        for (let round = 0; round < 5; round++) {
          const k = key();
          await ledger.begin(k, meta);
          const records = await Promise.all(
            Array.from({ length: 10 }, (_, i) => (i % 2 ? ledger : second).complete(k, success({ i }))),
          );
          const stored = (await ledger.get(k))?.outcome;
          expect(stored).toBeDefined();
          for (const record of records) expect(record.outcome).toEqual(stored);
        }
      }),
    );

    it(
      'complete without begin is NotFoundError and records nothing',
      withLedger(async ({ ledger }) => {
        const k = key();
        await expect(ledger.complete(k, failure)).rejects.toBeInstanceOf(NotFoundError);
        expect(await ledger.get(k)).toBeUndefined();
      }),
    );

    it(
      'calls are scoped by tenant: the same toolCallId in two tenants are two calls',
      withLedger(async ({ ledger }) => {
        const { toolCallId } = key();
        const acme = { tenantId: 'acme', toolCallId };
        const globex = { tenantId: 'globex', toolCallId };
        expect((await ledger.begin(acme, meta)).state).toBe('new');
        expect(await ledger.get(globex)).toBeUndefined();
        await ledger.complete(acme, success('acme'));
        expect((await ledger.begin(globex, meta)).state).toBe('new');
        await expect(
          ledger.complete({ tenantId: 'globex', toolCallId: 'other' }, failure),
        ).rejects.toBeInstanceOf(NotFoundError);
        expect((await ledger.get(globex))?.state).toBe('in-flight');
        expect((await ledger.get(acme))?.outcome).toEqual(success('acme'));
      }),
    );

    it(
      'refuses keys it cannot store unambiguously',
      withLedger(async ({ ledger }) => {
        await expect(ledger.begin({ tenantId: 'a|b', toolCallId: 'c' }, meta)).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(ledger.begin({ tenantId: '', toolCallId: 'c' }, meta)).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(ledger.begin({ tenantId: 'a', toolCallId: '' }, meta)).rejects.toBeInstanceOf(
          ValidationError,
        );
        await expect(ledger.get({ tenantId: 'a', toolCallId: 'x'.repeat(257) })).rejects.toBeInstanceOf(
          ValidationError,
        );
      }),
    );

    it(
      'a record read back cannot be changed by its reader',
      withLedger(async ({ ledger }) => {
        const k = key();
        await ledger.begin(k, meta);
        await ledger.complete(k, success({ items: [1, 2] }));
        const read = await ledger.get(k);
        (read?.outcome as { result: { items: number[] } }).result.items.push(3);
        expect((await ledger.get(k))?.outcome).toEqual(success({ items: [1, 2] }));
      }),
    );
  });
};
