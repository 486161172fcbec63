import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { defaultsDecider } from './defaults.decider.js';

const at = '2026-11-24T03:00:00.000Z';
const put = (defaults: Record<string, unknown>) => ({ type: 'PutDefaults' as const, defaults, at });

const fieldOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details['field'] as string | undefined;
    throw error;
  }
  return undefined;
};

describe('tenant defaults decider', () => {
  it('records the fields given and keeps the others', () => {
    const first = defaultsDecider.decide(put({ model: 'openai:gpt-4o-mini', maxSteps: 5 }), {});
    const state = first.reduce(defaultsDecider.evolve, defaultsDecider.initialState());
    const second = defaultsDecider.decide(put({ temperature: 0.5 }), state);
    expect(second.reduce(defaultsDecider.evolve, state)).toEqual({
      model: 'openai:gpt-4o-mini',
      maxSteps: 5,
      temperature: 0.5,
    });
  });

  it('records nothing when every field given is already set so', () => {
    expect(defaultsDecider.decide(put({ maxSteps: 5 }), { maxSteps: 5, temperature: 1 })).toEqual([]);
  });

  it('refuses a bad field naming it', () => {
    expect(fieldOf(() => defaultsDecider.decide(put({ model: 'gpt-4o' }), {}))).toBe('model');
    expect(fieldOf(() => defaultsDecider.decide(put({ model: 'acme:x' }), {}))).toBe('model');
    expect(fieldOf(() => defaultsDecider.decide(put({ temperature: 2.5 }), {}))).toBe('temperature');
    expect(fieldOf(() => defaultsDecider.decide(put({ maxSteps: 0 }), {}))).toBe('maxSteps');
    expect(fieldOf(() => defaultsDecider.decide(put({ maxSteps: 1.5 }), {}))).toBe('maxSteps');
  });
});
