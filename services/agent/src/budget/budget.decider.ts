import type { Decider } from '@keel/core';
import { BudgetExceededError, ValidationError } from '@keel/core';
import type { BudgetEvent } from '@keel/events';

/**
 * A tenant's spending in one calendar month (UTC). Amounts are kept in integer nano-USD, so sums
 * of many small costs neither drift nor make `spent + reserved ≥ budget` flip on a rounding error.
 */
export interface MonthBudget {
  spentNanos: number;
  reservedNanos: number;
  /** Admitted turns not settled yet, by turn id. */
  reserved: Record<string, { estimateNanos: number; conversationId: string; at: string }>;
  /** Turns settled: settling or reserving them again changes nothing (idempotent settlement). */
  settled: Record<string, true>;
  /** The largest settled turn of the month: new reservations are at least this. */
  maxTurnNanos: number;
}

/** The commands of a month's budget. */
export type BudgetCommand =
  | {
      type: 'ReserveTurn';
      turnId: string;
      conversationId: string;
      /** The budget in force (from the tenant registry). */
      monthlyUsd: number;
      /** The floor of the estimate (KEEL_BUDGET_TURN_RESERVE_USD). */
      reserveUsd: number;
      /** `yyyy-mm`, for the refusal's message. */
      month: string;
      at: string;
    }
  | { type: 'SettleTurn'; turnId: string; costUsd: number; unpricedSteps: number; at: string }
  | { type: 'ReleaseTurn'; turnId: string; reason: 'submit_refused' | 'no_usage' | 'orphaned'; at: string };

const NANOS_PER_USD = 1_000_000_000;

/** USD as integer nano-USD. */
export const toNanos = (usd: number): number => Math.round(usd * NANOS_PER_USD);

/** Integer nano-USD as USD. */
export const toUsd = (nanos: number): number => nanos / NANOS_PER_USD;

const requireAmount = (usd: number, field: string): void => {
  if (!Number.isFinite(usd) || usd < 0)
    throw new ValidationError(`${field} must be a finite number ≥ 0`, { field });
};

const initialState = (): MonthBudget => ({
  spentNanos: 0,
  reservedNanos: 0,
  reserved: {},
  settled: {},
  maxTurnNanos: 0,
});

/** One budget command, by its type. */
type CommandOf<T extends BudgetCommand['type']> = Extract<BudgetCommand, { type: T }>;

const reserveTurn = (command: CommandOf<'ReserveTurn'>, state: MonthBudget): BudgetEvent[] => {
  const { turnId, conversationId, monthlyUsd, reserveUsd, month, at } = command;
  requireAmount(monthlyUsd, 'monthlyUsd');
  requireAmount(reserveUsd, 'reserveUsd');
  if (state.reserved[turnId] || state.settled[turnId]) return [];
  if (state.spentNanos + state.reservedNanos >= toNanos(monthlyUsd)) {
    const spentUsd = toUsd(state.spentNanos);
    const reservedUsd = toUsd(state.reservedNanos);
    throw new BudgetExceededError(
      `the monthly budget of ${monthlyUsd} USD is used up for ${month} (UTC): ${spentUsd} USD spent, ${reservedUsd} USD reserved by running turns`,
      { details: { month, monthlyUsd, spentUsd, reservedUsd } },
    );
  }
  const estimateUsd = toUsd(Math.max(toNanos(reserveUsd), state.maxTurnNanos));
  return [{ type: 'BudgetReserved', data: { turnId, conversationId, estimateUsd, monthlyUsd, at } }];
};

const settleTurn = (command: CommandOf<'SettleTurn'>, state: MonthBudget): BudgetEvent[] => {
  const { turnId, costUsd, unpricedSteps, at } = command;
  requireAmount(costUsd, 'costUsd');
  if (state.settled[turnId]) return [];
  // A turn holding no reservation (admitted without a budget, or released because its submit
  // looked refused yet was written) still has its cost recorded; if it cost nothing, nothing.
  if (!state.reserved[turnId] && toNanos(costUsd) === 0) return [];
  return [{ type: 'BudgetSettled', data: { turnId, costUsd, unpricedSteps, at } }];
};

const decide = (command: BudgetCommand, state: MonthBudget): BudgetEvent[] => {
  switch (command.type) {
    case 'ReserveTurn':
      return reserveTurn(command, state);
    case 'SettleTurn':
      return settleTurn(command, state);
    case 'ReleaseTurn': {
      const { turnId, reason, at } = command;
      return state.reserved[turnId] ? [{ type: 'BudgetReleased', data: { turnId, reason, at } }] : [];
    }
    default: {
      const unknown: never = command;
      throw new ValidationError(`unknown budget command ${String((unknown as { type: unknown }).type)}`);
    }
  }
};

/** Removes a turn's reservation from the state, if it has one. */
const unreserve = (state: MonthBudget, turnId: string): MonthBudget => {
  const held = state.reserved[turnId];
  if (!held) return state;
  const { [turnId]: _removed, ...reserved } = state.reserved;
  return { ...state, reserved, reservedNanos: state.reservedNanos - held.estimateNanos };
};

const evolve = (state: MonthBudget, event: BudgetEvent): MonthBudget => {
  switch (event.type) {
    case 'BudgetReserved': {
      const { turnId, conversationId, estimateUsd, at } = event.data;
      const estimateNanos = toNanos(estimateUsd);
      return {
        ...state,
        reserved: { ...state.reserved, [turnId]: { estimateNanos, conversationId, at } },
        reservedNanos: state.reservedNanos + estimateNanos,
      };
    }
    case 'BudgetSettled': {
      const costNanos = toNanos(event.data.costUsd);
      const after = unreserve(state, event.data.turnId);
      return {
        ...after,
        spentNanos: after.spentNanos + costNanos,
        maxTurnNanos: Math.max(after.maxTurnNanos, costNanos),
        settled: { ...after.settled, [event.data.turnId]: true },
      };
    }
    case 'BudgetReleased':
      return unreserve(state, event.data.turnId);
    default:
      return state;
  }
};

/**
 * A tenant's budget for one month. A turn is admitted while spent + reserved < budget; its
 * estimate is max(the reserve floor, the largest turn settled this month); settling or releasing
 * a turn twice is a no-op.
 */
export const budgetDecider: Decider<MonthBudget, BudgetCommand, BudgetEvent> = {
  initialState,
  decide,
  evolve,
};
