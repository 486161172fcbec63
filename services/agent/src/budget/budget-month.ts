import { ValidationError, streamName } from '@keel/core';
import { BUDGET_CATEGORY } from '@keel/events';

/** The calendar month (UTC) an ISO-8601 instant falls in, as `yyyy-mm`: budgets are per UTC month. */
export const budgetMonthOf = (at: string): string => {
  const time = new Date(at);
  if (Number.isNaN(time.getTime())) throw new ValidationError(`invalid time "${at}"`, { field: 'at' });
  return time.toISOString().slice(0, 7);
};

/** The stream of a tenant's budget for one month: `budget-<yyyy-mm>` (the tenant is the store's partition). */
export const budgetStream = (month: string): string => streamName(BUDGET_CATEGORY, month);
