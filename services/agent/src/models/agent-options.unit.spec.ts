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
          fallbackModels: ['openai:gpt-4o'],
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

  it("checks the options against every fallback's provider too, naming the option and the model", () => {
    const refusal = (run: () => void): ValidationError | undefined => {
      try {
        run();
      } catch (error) {
        return error as ValidationError;
      }
      return undefined;
    };
    const refused = refusal(() =>
      checkAgentOptions('openai:o3-mini', {
        providerOptions: { reasoningEffort: 'low' },
        fallbackModels: ['openai:gpt-4o', 'anthropic:claude-sonnet-4-5'],
      }),
    );
    expect(refused?.field).toBe('providerOptions.reasoningEffort');
    expect(refused?.message).toContain('anthropic:claude-sonnet-4-5');
    // Options both providers take pass.
    expect(
      fieldOf(() =>
        checkAgentOptions('openai:gpt-4o', {
          providerOptions: { maxOutputTokens: 500, topP: 0.9 },
          fallbackModels: ['anthropic:claude-sonnet-4-5'],
        }),
      ),
    ).toBe(undefined);
  });

  it("refuses extended thinking on an Anthropic fallback with the agent's own temperature", () => {
    const options = {
      providerOptions: { thinkingBudgetTokens: 2048 },
      fallbackModels: ['anthropic:claude-haiku-4-5'],
    };
    expect(fieldOf(() => checkAgentOptions('google:gemini-2.5-pro', options, [], 0.2))).toBe('temperature');
    expect(fieldOf(() => checkAgentOptions('google:gemini-2.5-pro', options, [], undefined))).toBe(undefined);
  });
});
