import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { chatFieldsOf, checkProviderOptions } from './provider-options.js';

const fieldOf = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.details['field'];
    throw error;
  }
  return undefined;
};

describe('provider options', () => {
  it('maps each option to the LangChain field of each provider', () => {
    const all = {
      maxOutputTokens: 500,
      reasoningEffort: 'high' as const,
      thinkingBudgetTokens: 2048,
      topP: 0.9,
    };
    expect(chatFieldsOf('openai', all)).toEqual({ maxTokens: 500, reasoning: { effort: 'high' }, topP: 0.9 });
    expect(chatFieldsOf('anthropic', all)).toEqual({
      maxTokens: 500,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      topP: 0.9,
    });
    expect(chatFieldsOf('google', all)).toEqual({
      maxOutputTokens: 500,
      thinkingConfig: { thinkingBudget: 2048 },
      topP: 0.9,
    });
    expect(chatFieldsOf('ollama', all)).toEqual({ numPredict: 500, topP: 0.9 });
    expect(chatFieldsOf('demo', all)).toEqual({});
    expect(chatFieldsOf('openai', {})).toEqual({});
  });

  it('refuses an option the provider cannot take, naming it', () => {
    expect(fieldOf(() => checkProviderOptions('anthropic', { reasoningEffort: 'low' }))).toBe(
      'providerOptions.reasoningEffort',
    );
    expect(fieldOf(() => checkProviderOptions('openai', { thinkingBudgetTokens: 1024 }))).toBe(
      'providerOptions.thinkingBudgetTokens',
    );
    expect(
      fieldOf(() => checkProviderOptions('ollama', { maxOutputTokens: 10, reasoningEffort: 'low' })),
    ).toBe('providerOptions.reasoningEffort');
    expect(
      fieldOf(() => checkProviderOptions('openai', { maxOutputTokens: 10, reasoningEffort: 'low', topP: 1 })),
    ).toBe(undefined);
  });
});
