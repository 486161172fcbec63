import type { EventStore } from '@keel/core';
import { BudgetExceededError, InMemoryEventBus, InMemoryEventStore, PreconditionError } from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import { describe, expect, it } from 'vitest';
import { BudgetDirectory } from './budget-directory.js';
import { BudgetSettlement } from './budget-settlement.js';
import { toUsd } from './budget.decider.js';
import { TurnBudgets } from './turn-budgets.js';

// Reservations are stamped now: an old one whose turn is in no conversation is reclaimed as an orphan.
const at = new Date().toISOString();
const month = at.slice(0, 7);
const stream = `budget-${month}`;

/** Sets a budget the way the gateway does: a BudgetSet on the registry stream of the platform tenant. */
const setBudget = (store: EventStore, tenantId: string, monthlyUsd: number) =>
  store.append('keel', 'tenants-registry', [{ type: 'BudgetSet', data: { tenantId, monthlyUsd, at } }]);

const budgetsOn = (store: EventStore, options: { orphanAfterMs?: number; now?: () => number } = {}) =>
  new TurnBudgets(store, new BudgetDirectory(store, { maxAgeMs: 0 }), { reserveUsd: 0.05, ...options });

const turn = (turnId: string, conversationId = 'c1') => ({ tenantId: 'acme', conversationId, turnId, at });

describe('TurnBudgets.admit', () => {
  it('admits exactly the turns that fit when 30 submits race for a budget of 3', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'acme', 0.15);
    const budgets = budgetsOn(store);
    let submitted = 0;
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) =>
        budgets.admit(turn(`t${i}`), async () => {
          submitted++;
          return i;
        }),
      ),
    );
    expect(submitted).toBe(3);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(3);
    const refusals = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refusals).toHaveLength(27);
    for (const refusal of refusals) expect(refusal.reason).toBeInstanceOf(BudgetExceededError);
    const state = await budgets.month('acme', month);
    expect(Object.keys(state.reserved)).toHaveLength(3);
    expect(toUsd(state.reservedNanos)).toBe(0.15);
  });

  it('writes no budget event for a tenant without a budget', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'other', 1);
    const result = await budgetsOn(store).admit(turn('t1'), () => Promise.resolve('ran'));
    expect(result).toBe('ran');
    expect(await store.streamVersion('acme', stream)).toBe(0);
  });

  it('applies a budget set after the first read (the registry is read again)', async () => {
    const store = new InMemoryEventStore();
    const budgets = budgetsOn(store);
    await budgets.admit(turn('t1'), () => Promise.resolve());
    await setBudget(store, 'acme', 0);
    await expect(budgets.admit(turn('t2'), () => Promise.resolve())).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
  });

  it('gives the reservation back when the submit is refused, and rethrows the refusal', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'acme', 0.05);
    const budgets = budgetsOn(store);
    const busy = new PreconditionError('a turn is already running');
    await expect(budgets.admit(turn('t1'), () => Promise.reject(busy))).rejects.toBe(busy);
    const state = await budgets.month('acme', month);
    expect(state.reservedNanos).toBe(0);
    expect(await budgets.admit(turn('t2'), () => Promise.resolve('ran'))).toBe('ran');
  });

  it('reclaims a reservation whose turn never reached its conversation once the budget is short', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'acme', 0.05);
    let now = Date.parse(at);
    const budgets = budgetsOn(store, { orphanAfterMs: 60_000, now: () => now });
    // A process reserved t1 and died before submitting it: the budget looks full.
    await store.append('acme', stream, [
      {
        type: 'BudgetReserved',
        data: { turnId: 't1', conversationId: 'c1', estimateUsd: 0.05, monthlyUsd: 0.05, at },
      },
    ]);
    await expect(budgets.admit(turn('t2'), () => Promise.resolve())).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    now += 61_000;
    expect(await budgets.admit(turn('t3'), () => Promise.resolve('ran'))).toBe('ran');
    const events = await store.read('acme', stream);
    expect(events.map((e) => e.type)).toEqual(['BudgetReserved', 'BudgetReleased', 'BudgetReserved']);
    expect(events[1]?.data).toMatchObject({ turnId: 't1', reason: 'orphaned' });
  });

  it('turns refused together share one reclaim pass, and exactly one takes the reclaimed room', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'acme', 0.05);
    const now = Date.parse(at) + 61_000;
    let conversationReads = 0;
    const read = store.read.bind(store);
    store.read = (tenantId, name, options) => {
      if (name === 'conversation-c1') conversationReads++;
      return read(tenantId, name, options);
    };
    const budgets = budgetsOn(store, { orphanAfterMs: 60_000, now: () => now });
    await store.append('acme', stream, [
      {
        type: 'BudgetReserved',
        data: { turnId: 't1', conversationId: 'c1', estimateUsd: 0.05, monthlyUsd: 0.05, at },
      },
    ]);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        budgets.admit({ ...turn(`t${i + 2}`, 'c2'), at: new Date(now).toISOString() }, () =>
          Promise.resolve(),
        ),
      ),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    expect(conversationReads).toBe(1);
    const types = (await store.read('acme', stream)).map((e) => e.type);
    expect(types).toEqual(['BudgetReserved', 'BudgetReleased', 'BudgetReserved']);
  });

  it('does not reclaim an old reservation whose turn is in its conversation', async () => {
    const store = new InMemoryEventStore();
    await setBudget(store, 'acme', 0.05);
    const now = Date.now() + 3_600_000;
    const budgets = budgetsOn(store, { now: () => now });
    await budgets.admit(turn('t1'), () =>
      store.append('acme', 'conversation-c1', [
        { type: 'UserMessageAdded', data: { messageId: 'm1', turnId: 't1', content: 'hi', at } },
      ]),
    );
    await expect(budgets.admit(turn('t2'), () => Promise.resolve())).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
  });
});

describe('BudgetSettlement', () => {
  it('settles an ended turn to the sum of its usage (null as 0), once, and releases a turn without usage', async () => {
    const store = new InMemoryEventStore();
    const bus = new InMemoryEventBus();
    await setBudget(store, 'acme', 1);
    const budgets = budgetsOn(store);
    const settlement = new BudgetSettlement(store, bus, budgets);
    await settlement.start();
    const usage = (turnId: string, step: number, costUsd: number | null) => ({
      type: 'UsageRecorded',
      data: {
        turnId,
        step,
        model: 'openai:gpt-4o-mini',
        promptTokens: 10,
        completionTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd,
      },
    });
    const message = (turnId: string) => ({
      type: 'UserMessageAdded',
      data: { messageId: `m-${turnId}`, turnId, content: 'hi', at },
    });
    await budgets.admit(turn('t1'), async () => {
      const appended = await store.append('acme', 'conversation-c1', [message('t1')]);
      await bus.publish(appended.events);
    });
    await budgets.admit(turn('t2'), async () => {
      const appended = await store.append('acme', 'conversation-c1', [message('t2')]);
      await bus.publish(appended.events);
    });
    const ended = await store.append('acme', 'conversation-c1', [
      usage('t1', 1, 0.012),
      usage('t1', 2, null),
      usage('t1', 3, 0.003),
      { type: 'TurnCompleted', data: { turnId: 't1', finishReason: 'stop', at } },
      { type: 'TurnFailed', data: { turnId: 't2', error: { code: 'provider_error', message: 'x' }, at } },
    ]);
    await bus.publish(ended.events);
    await eventuallyTrue(async () => (await store.streamVersion('acme', stream)) === 4);
    // A redelivery of the same end events changes nothing.
    await bus.publish(ended.events.map((e) => ({ ...e, eventId: `${e.eventId}-again` })));
    await new Promise((r) => setTimeout(r, 50));
    const events = await store.read('acme', stream);
    expect(events.map((e) => e.type)).toEqual([
      'BudgetReserved',
      'BudgetReserved',
      'BudgetSettled',
      'BudgetReleased',
    ]);
    expect(events[2]?.data).toMatchObject({ turnId: 't1', costUsd: 0.015, unpricedSteps: 1 });
    expect(events[3]?.data).toMatchObject({ turnId: 't2', reason: 'no_usage' });
    const state = await budgets.month('acme', month);
    expect({ spent: toUsd(state.spentNanos), reserved: state.reservedNanos }).toEqual({
      spent: 0.015,
      reserved: 0,
    });
    await settlement.stop();
    await bus.close();
  });
});
