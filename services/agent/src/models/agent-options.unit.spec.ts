import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { checkAgentOptions } from './agent-options.js';

const fieldOf = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details['field'];
    throw error;
  }
  return undefined;
};

describe('checkAgentOptions', () => {
  it('accepts options the model takes and fallbacks of known providers', () => {
    expect(
      fieldOf(() =>
        checkAgentOptions('openai:o3-mini', {
          providerOptions: { reasoningEffort: 'low' },
          fallbackModels: ['anthropic:claude-sonnet-4-5', 'openai:gpt-4o'],
        }),
      ),
    ).toBe(undefined);
  });

  it('names the option, or the fallback, it refuses', () => {
    expect(
      fieldOf(() =>
        checkAgentOptions('anthropic:claude-sonnet-4-5', { providerOptions: { reasoningEffort: 'low' } }),
      ),
    ).toBe('providerOptions.reasoningEffort');
    expect(
      fieldOf(() =>
        checkAgentOptions('openai:gpt-4o', { fallbackModels: ['openai:gpt-4o-mini', 'acme:big'] }),
      ),
    ).toBe('fallbackModels[1]');
    expect(fieldOf(() => checkAgentOptions('openai:gpt-4o', { fallbackModels: ['gpt-4o-mini'] }))).toBe(
      'fallbackModels[0]',
    );
    expect(fieldOf(() => checkAgentOptions('openai:gpt-4o', { fallbackModels: ['openai:gpt-4o'] }))).toBe(
      'fallbackModels[0]',
    );
  });
});
