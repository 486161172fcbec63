import type { EventStore } from '@keel/core';
import { BudgetExceededError, InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { BudgetDirectory } from './budget-directory.js';
import { TurnBudgets } from './turn-budgets.js';

const at = new Date().toISOString();
const month = at.slice(0, 7);
const stream = `budget-${month}`;

/** The store, counting the reads and appends of the budget stream. */
const countingStore = () => {
  const store = new InMemoryEventStore();
  const counts = { reads: 0, appends: 0 };
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'read' || property === 'append') {
        return (tenantId: string, name: string, ...rest: unknown[]) => {
          if (name === stream) counts[property === 'read' ? 'reads' : 'appends']++;
          return (target[property] as (...args: unknown[]) => unknown).call(target, tenantId, name, ...rest);
        };
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  }) as EventStore;
  return { store: counted, counts };
};

/** An agent process's budgets (its own memory of the months) on a store shared with others. */
const processOn = (store: EventStore) =>
  new TurnBudgets(store, new BudgetDirectory(store, { maxAgeMs: 60_000 }), { reserveUsd: 0.05 });

const setBudget = (store: EventStore, monthlyUsd: number) =>
  store.append('keel', 'tenants-registry', [
    { type: 'BudgetSet', data: { tenantId: 'acme', monthlyUsd, at } },
  ]);

const turn = (turnId: string) => ({ tenantId: 'acme', conversationId: `c-${turnId}`, turnId, at });
const admit = (budgets: TurnBudgets, turnId: string) =>
  budgets.admit(turn(turnId), () => Promise.resolve(turnId));

describe('BudgetLog: admission on the month this process remembers', () => {
  it('admits a turn with one append and no read of the budget stream once the month is known', async () => {
    const { store, counts } = countingStore();
    await setBudget(store, 1);
    const budgets = processOn(store);
    await admit(budgets, 't1');
    const before = { ...counts };
    expect(await admit(budgets, 't2')).toBe('t2');
    expect({ reads: counts.reads - before.reads, appends: counts.appends - before.appends }).toEqual({
      reads: 0,
      appends: 1,
    });
  });

  it('groups the reservations waiting in the process into one commit, each decided in order', async () => {
    const { store, counts } = countingStore();
    await setBudget(store, 0.2);
    const budgets = processOn(store);
    await admit(budgets, 't0');
    const before = counts.appends;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => admit(budgets, `t${i + 1}`)),
    );
    const admitted = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(admitted).toEqual(['t1', 't2', 't3']);
    for (const o of outcomes.slice(3)) {
      expect(o.status === 'rejected' && o.reason instanceof BudgetExceededError).toBe(true);
    }
    expect(counts.appends - before).toBeLessThanOrEqual(2);
    const events = await store.read('acme', stream);
    expect(events.map((e) => (e.data as { turnId: string }).turnId)).toEqual(['t0', 't1', 't2', 't3']);
  });

  it('a stale memory loses its append, reads what another process reserved and decides again', async () => {
    const { store } = countingStore();
    await setBudget(store, 0.1);
    const [a, b] = [processOn(store), processOn(store)];
    await admit(a, 't1');
    await admit(b, 't2');
    // a still remembers one reservation of two; its append at that version is refused.
    await expect(admit(a, 't3')).rejects.toBeInstanceOf(BudgetExceededError);
    const state = await a.month('acme', month);
    expect(Object.keys(state.reserved).sort()).toEqual(['t1', 't2']);
  });

  it('refuses only on the stream head: a reservation another process released is read first', async () => {
    const { store } = countingStore();
    await setBudget(store, 0.05);
    const [a, b] = [processOn(store), processOn(store)];
    await admit(a, 't1');
    await expect(admit(b, 't2')).rejects.toBeInstanceOf(BudgetExceededError);
    await a.release('acme', month, { turnId: 't1', reason: 'no_usage', at });
    // b remembers the month full; the release is read before any refusal.
    expect(await admit(b, 't3')).toBe('t3');
  });

  it('a release decided on a memory without the reservation reads the head before doing nothing', async () => {
    const { store } = countingStore();
    await setBudget(store, 1);
    const [a, b] = [processOn(store), processOn(store)];
    await admit(b, 't0');
    await admit(a, 't1');
    // b's memory has no t1: its settlement must still release it.
    await b.release('acme', month, { turnId: 't1', reason: 'no_usage', at });
    const state = await a.month('acme', month);
    expect(Object.keys(state.reserved)).toEqual(['t0']);
  });
});
