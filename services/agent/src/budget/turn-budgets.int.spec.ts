import { BudgetExceededError } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetDirectory } from './budget-directory.js';
import { toUsd } from './budget.decider.js';
import { TurnBudgets } from './turn-budgets.js';

const mongoUrl = mongoUrlFor(uniqueName('budgets'), testInfra().mongoUrl);

describe('TurnBudgets on FerretDB: two agent instances (two store connections) race for one budget', () => {
  const stores: MongoEventStore[] = [];

  beforeAll(async () => {
    stores.push(await MongoEventStore.connect(mongoUrl), await MongoEventStore.connect(mongoUrl));
  });

  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
  });

  it('admits exactly the N turns the budget fits out of 10×N concurrent submits', async () => {
    const N = 4;
    const at = new Date().toISOString();
    await stores[0]!.append('keel', 'tenants-registry', [
      { type: 'BudgetSet', data: { tenantId: 'thrifty', monthlyUsd: N * 0.02, at } },
    ]);
    const instances = stores.map(
      (store) => new TurnBudgets(store, new BudgetDirectory(store, { maxAgeMs: 0 }), { reserveUsd: 0.02 }),
    );
    let submitted = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 * N }, (_, i) =>
        instances[i % 2]!.admit({ tenantId: 'thrifty', conversationId: `c${i}`, turnId: `t${i}`, at }, () => {
          submitted++;
          return Promise.resolve();
        }),
      ),
    );
    expect(submitted).toBe(N);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refused).toHaveLength(9 * N);
    for (const refusal of refused) expect(refusal.reason).toBeInstanceOf(BudgetExceededError);
    const month = await instances[1]!.month('thrifty', at.slice(0, 7));
    expect(Object.keys(month.reserved)).toHaveLength(N);
    expect(toUsd(month.reservedNanos)).toBe(N * 0.02);
    const events = await stores[1]!.read('thrifty', `budget-${at.slice(0, 7)}`);
    expect(events.map((e) => e.type)).toEqual(Array<string>(N).fill('BudgetReserved'));
  });
});
