import { describe, expect, it } from 'vitest';
import {
  BudgetExceededError,
  ConcurrencyError,
  ConflictError,
  PreconditionError,
  ResourceExhaustedError,
  kindOf,
  messageOf,
} from './keel-error.js';

describe('the closed error set', () => {
  it('a conflict is ABORTED, a lost concurrency race is a conflict, a precondition is not', () => {
    expect(new ConflictError('a turn is already running').code).toBe('ABORTED');
    expect(new ConcurrencyError('conversation-c1', 3, 4)).toBeInstanceOf(ConflictError);
    expect(new PreconditionError('the agent has no model')).not.toBeInstanceOf(ConflictError);
  });

  it('a budget refusal is RESOURCE_EXHAUSTED with a kind of its own; another is not', () => {
    const refusal = new BudgetExceededError('the monthly budget is used up', {
      details: { month: '2026-11' },
    });
    expect(refusal).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { month: '2026-11' } });
    expect(kindOf(refusal)).toBe('budget_exceeded');
    expect(kindOf(new ResourceExhaustedError('slow down'))).toBeUndefined();
    expect(kindOf(new ConflictError('busy'))).toBeUndefined();
  });

  it('messageOf reads an Error message, or the string of anything else thrown', () => {
    expect(messageOf(new ConflictError('busy'))).toBe('busy');
    expect(messageOf('plain')).toBe('plain');
    expect(messageOf(42)).toBe('42');
  });
});
