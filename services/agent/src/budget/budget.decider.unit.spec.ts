import { BudgetExceededError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { BudgetEvent, BudgetReleased, BudgetReserved, BudgetSettled } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { BudgetCommand } from './budget.decider.js';
import { budgetDecider } from './budget.decider.js';

const spec = DeciderSpec.for(budgetDecider);
const at = '2026-11-21T10:00:00.000Z';

const reserve = (turnId: string, monthlyUsd = 0.15, reserveUsd = 0.05): BudgetCommand => ({
  type: 'ReserveTurn',
  turnId,
  conversationId: 'c1',
  monthlyUsd,
  reserveUsd,
  month: '2026-11',
  at,
});
const reserved = (turnId: string, estimateUsd = 0.05, monthlyUsd = 0.15): BudgetReserved => ({
  type: 'BudgetReserved',
  data: { turnId, conversationId: 'c1', estimateUsd, monthlyUsd, at },
});
const settled = (turnId: string, costUsd: number, unpricedSteps = 0): BudgetSettled => ({
  type: 'BudgetSettled',
  data: { turnId, costUsd, unpricedSteps, at },
});
const released = (turnId: string, reason: BudgetReleased['data']['reason'] = 'no_usage'): BudgetReleased => ({
  type: 'BudgetReleased',
  data: { turnId, reason, at },
});

describe('budget decider: admission', () => {
  it('reserves the floor for the first turn of the month', () => {
    spec
      .given([])
      .when(reserve('t1'))
      .then([reserved('t1')]);
  });

  it('admits while spent + reserved < budget and refuses once it is ≥ budget (exactly N turns fit)', () => {
    spec
      .given([reserved('t1'), reserved('t2')])
      .when(reserve('t3'))
      .then([reserved('t3')]);
    spec
      .given([reserved('t1'), reserved('t2'), reserved('t3')])
      .when(reserve('t4'))
      .thenThrows(BudgetExceededError, /^the monthly budget of .*0\.15 USD is used up for 2026-11 \(UTC\)/);
  });

  it('counts spend like reservations: settled turns fill the budget too', () => {
    spec
      .given([reserved('t1'), settled('t1', 0.1), reserved('t2'), settled('t2', 0.05)])
      .when(reserve('t3'))
      .thenThrows(BudgetExceededError, /0\.15 USD spent, 0 USD reserved/);
  });

  it('adds amounts exactly: 0.1 + 0.2 spent fills a 0.3 budget', () => {
    spec
      .given([settled('a', 0.1), settled('b', 0.2)])
      .when(reserve('t', 0.3))
      .thenThrows(BudgetExceededError);
  });

  it('refuses every turn under a zero budget', () => {
    spec.given([]).when(reserve('t1', 0)).thenThrows(BudgetExceededError);
  });

  it('reserves the largest settled turn of the month when it is above the floor', () => {
    spec
      .given([reserved('t1'), settled('t1', 0.08)])
      .when(reserve('t2', 1))
      .then([reserved('t2', 0.08, 1)]);
  });

  it('marks the refusal as a budget refusal with the numbers', () => {
    let thrown: unknown;
    try {
      budgetDecider.decide(
        reserve('t9', 0.1),
        budgetDecider.evolve(budgetDecider.initialState(), settled('x', 0.1)),
      );
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BudgetExceededError);
    expect((thrown as BudgetExceededError).code).toBe('RESOURCE_EXHAUSTED');
    expect((thrown as BudgetExceededError).details).toMatchObject({
      month: '2026-11',
      monthlyUsd: 0.1,
      spentUsd: 0.1,
      reservedUsd: 0,
    });
  });

  it('reserves a turn once: a retried reservation changes nothing', () => {
    spec
      .given([reserved('t1')])
      .when(reserve('t1'))
      .then([]);
    spec
      .given([reserved('t1'), settled('t1', 0.01)])
      .when(reserve('t1'))
      .then([]);
  });

  it('refuses a negative or non-finite budget or floor', () => {
    spec
      .given([])
      .when(reserve('t1', -1))
      .thenThrows(ValidationError, /monthlyUsd/);
    spec
      .given([])
      .when(reserve('t1', 1, Number.NaN))
      .thenThrows(ValidationError, /reserveUsd/);
  });
});

describe('budget decider: settlement and release', () => {
  it('settles a reserved turn to its real cost, replacing the reservation', () => {
    spec
      .given([reserved('t1')])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: 0.02, unpricedSteps: 0, at })
      .then([settled('t1', 0.02)]);
    spec
      .given([reserved('t1'), reserved('t2')])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: 0.02, unpricedSteps: 0, at })
      .thenState({
        spentNanos: 20_000_000,
        reservedNanos: 50_000_000,
        reserved: { t2: { estimateNanos: 50_000_000, conversationId: 'c1', at } },
        settled: { t1: true },
        maxTurnNanos: 20_000_000,
      });
  });

  it('settles twice as once (a redelivered turn end is a no-op)', () => {
    spec
      .given([reserved('t1'), settled('t1', 0.02)])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: 0.02, unpricedSteps: 0, at })
      .then([]);
  });

  it('records the cost of a turn admitted without a budget, and nothing when it cost nothing', () => {
    spec
      .given([])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: 0.03, unpricedSteps: 0, at })
      .then([settled('t1', 0.03)]);
    spec.given([]).when({ type: 'SettleTurn', turnId: 't1', costUsd: 0, unpricedSteps: 2, at }).then([]);
  });

  it('releases a reservation without cost, once; a turn holding none releases nothing', () => {
    spec
      .given([reserved('t1')])
      .when({ type: 'ReleaseTurn', turnId: 't1', reason: 'submit_refused', at })
      .then([released('t1', 'submit_refused')]);
    spec
      .given([reserved('t1')])
      .when({ type: 'ReleaseTurn', turnId: 't1', reason: 'no_usage', at })
      .thenState({ spentNanos: 0, reservedNanos: 0, reserved: {}, settled: {}, maxTurnNanos: 0 });
    spec
      .given([reserved('t1'), released('t1')])
      .when({ type: 'ReleaseTurn', turnId: 't1', reason: 'no_usage', at })
      .then([]);
    spec.given([]).when({ type: 'ReleaseTurn', turnId: 't1', reason: 'no_usage', at }).then([]);
  });

  it('still records the cost of a released turn (its submit looked refused but was written)', () => {
    spec
      .given([reserved('t1'), released('t1', 'submit_refused')])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: 0.01, unpricedSteps: 0, at })
      .then([settled('t1', 0.01)]);
  });

  it('frees the budget a released reservation held', () => {
    const given: BudgetEvent[] = [reserved('t1'), reserved('t2'), reserved('t3'), released('t2')];
    spec
      .given(given)
      .when(reserve('t4'))
      .then([reserved('t4')]);
  });

  it('refuses a negative cost', () => {
    spec
      .given([reserved('t1')])
      .when({ type: 'SettleTurn', turnId: 't1', costUsd: -0.01, unpricedSteps: 0, at })
      .thenThrows(ValidationError, /costUsd/);
  });
});
