import type { EventData } from '@keel/core';

/**
 * Category of a tenant's monthly budget streams: `budget-<yyyy-mm>` under the tenant (months are
 * calendar months in UTC). The stream is the unit of admission: a turn is admitted by appending
 * its reservation with the stream's expected version, so racing admissions are serialised.
 */
export const BUDGET_CATEGORY = 'budget';

/** A turn was admitted: `estimateUsd` is held against the month's budget until the turn settles. */
export type BudgetReserved = EventData<
  'BudgetReserved',
  {
    turnId: string;
    conversationId: string;
    estimateUsd: number;
    /** The monthly budget the admission was decided against. */
    monthlyUsd: number;
    at: string;
  }
>;

/**
 * A turn ended and cost this much (the sum of its UsageRecorded costs; an unpriced step counts 0,
 * `unpricedSteps` says how many). Its reservation, if any, is replaced by the cost.
 */
export type BudgetSettled = EventData<
  'BudgetSettled',
  { turnId: string; costUsd: number; unpricedSteps: number; at: string }
>;

/** A reservation was given back without cost: the submit was refused, or the turn ended before any model step. */
export type BudgetReleased = EventData<
  'BudgetReleased',
  { turnId: string; reason: 'submit_refused' | 'no_usage' | 'orphaned'; at: string }
>;

/** Every event of a budget stream. */
export type BudgetEvent = BudgetReserved | BudgetSettled | BudgetReleased;
