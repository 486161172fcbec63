import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { budgetMonthOf, budgetStream } from './budget-month.js';

describe('budget months are calendar months in UTC', () => {
  it('cuts at midnight UTC on the first of the month, whatever the offset of the instant', () => {
    expect(budgetMonthOf('2026-11-30T23:59:59.999Z')).toBe('2026-11');
    expect(budgetMonthOf('2026-12-01T00:00:00.000Z')).toBe('2026-12');
    // 01:00 in UTC+02:00 on 1 December is still November in UTC; 20:00 in UTC-05:00 on 31 December is January.
    expect(budgetMonthOf('2026-12-01T01:00:00+02:00')).toBe('2026-11');
    expect(budgetMonthOf('2026-12-31T20:00:00-05:00')).toBe('2027-01');
  });

  it('names the stream budget-<yyyy-mm> and refuses an unreadable time', () => {
    expect(budgetStream('2026-11')).toBe('budget-2026-11');
    expect(() => budgetMonthOf('yesterday')).toThrow(ValidationError);
  });
});
