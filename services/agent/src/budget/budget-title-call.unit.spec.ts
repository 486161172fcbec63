import type { EventStore } from '@keel/core';
import { InMemoryEventBus, InMemoryEventStore } from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import { describe, expect, it } from 'vitest';
import { BudgetDirectory } from './budget-directory.js';
import { BudgetSettlement, titleCallId } from './budget-settlement.js';
import { toUsd } from './budget.decider.js';
import { TurnBudgets } from './turn-budgets.js';

const at = new Date().toISOString();
const month = at.slice(0, 7);

const setBudget = (store: EventStore, tenantId: string, monthlyUsd: number) =>
  store.append('keel', 'tenants-registry', [{ type: 'BudgetSet', data: { tenantId, monthlyUsd, at } }]);

describe('BudgetSettlement: the auto title call', () => {
  it('settles the title call (usage step 0, after its turn ended) on its own, once', async () => {
    const store = new InMemoryEventStore();
    const bus = new InMemoryEventBus();
    await setBudget(store, 'acme', 1);
    const budgets = new TurnBudgets(store, new BudgetDirectory(store, { maxAgeMs: 0 }), { reserveUsd: 0.05 });
    const settlement = new BudgetSettlement(store, bus, budgets);
    await settlement.start();
    const title = {
      type: 'UsageRecorded',
      data: {
        turnId: 't1',
        step: 0,
        model: 'openai:gpt-4o-mini',
        promptTokens: 30,
        completionTokens: 4,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0.002,
        at,
      },
    };
    const appended = await store.append('acme', 'conversation-c1', [title]);
    await bus.publish(appended.events);
    await eventuallyTrue(async () => (await store.streamVersion('acme', `budget-${month}`)) === 1);
    await bus.publish(appended.events.map((e) => ({ ...e, eventId: `${e.eventId}-again` })));
    await new Promise((r) => setTimeout(r, 50));
    const events = await store.read('acme', `budget-${month}`);
    expect(events.map((e) => [e.type, (e.data as { turnId: string }).turnId])).toEqual([
      ['BudgetSettled', titleCallId('t1')],
    ]);
    expect(toUsd((await budgets.month('acme', month)).spentNanos)).toBe(0.002);
    await settlement.stop();
    await bus.close();
  });
});
