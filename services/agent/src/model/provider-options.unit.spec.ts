import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { chatFieldsOf, checkProviderOptions, checkThinking, temperatureFieldOf } from './provider-options.js';

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
    // Extended thinking takes no topP (nor a temperature: temperatureFieldOf).
    expect(chatFieldsOf('anthropic', all)).toEqual({
      maxTokens: 500,
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
    expect(chatFieldsOf('anthropic', { maxOutputTokens: 500, topP: 0.9 })).toEqual({
      maxTokens: 500,
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
    expect(
      fieldOf(() =>
        checkProviderOptions('anthropic:claude-sonnet-4-5', 'anthropic', { reasoningEffort: 'low' }),
      ),
    ).toBe('providerOptions.reasoningEffort');
    expect(
      fieldOf(() => checkProviderOptions('openai:gpt-4o', 'openai', { thinkingBudgetTokens: 1024 })),
    ).toBe('providerOptions.thinkingBudgetTokens');
    expect(
      fieldOf(() =>
        checkProviderOptions('ollama:llama3', 'ollama', { maxOutputTokens: 10, reasoningEffort: 'low' }),
      ),
    ).toBe('providerOptions.reasoningEffort');
    expect(
      fieldOf(() =>
        checkProviderOptions('openai:gpt-4o', 'openai', {
          maxOutputTokens: 10,
          reasoningEffort: 'low',
          topP: 1,
        }),
      ),
    ).toBe(undefined);
  });

  it('names the model an option is refused for', () => {
    try {
      checkProviderOptions('demo:echo', 'demo', { maxOutputTokens: 10 });
      expect.unreachable();
    } catch (error) {
      expect((error as ValidationError).message).toMatch(/providerOptions\.maxOutputTokens .*demo:echo/);
    }
  });

  it("refuses Anthropic's extended thinking with the agent's own temperature, a topP, or a budget over maxOutputTokens", () => {
    const model = 'anthropic:claude-sonnet-4-5';
    const think = (options: object, own?: number) =>
      fieldOf(() => checkThinking(model, 'anthropic', { thinkingBudgetTokens: 2048, ...options }, own));
    expect(think({}, 0)).toBe('temperature');
    expect(think({}, 0.7)).toBe('temperature');
    expect(think({}, 1)).toBe(undefined);
    expect(think({})).toBe(undefined);
    expect(think({ topP: 0.95 })).toBe('providerOptions.topP');
    expect(think({ maxOutputTokens: 2048 })).toBe('providerOptions.thinkingBudgetTokens');
    expect(think({ maxOutputTokens: 4096 })).toBe(undefined);
    // Google's thinking budget takes a temperature.
    expect(
      fieldOf(() => checkThinking('google:gemini-2.5-pro', 'google', { thinkingBudgetTokens: 2048 }, 0)),
    ).toBe(undefined);
  });

  it('sends no temperature under Anthropic extended thinking (one from the defaults is not an error)', () => {
    expect(temperatureFieldOf('anthropic', { thinkingBudgetTokens: 2048 }, 0)).toEqual({});
    expect(temperatureFieldOf('anthropic', { maxOutputTokens: 100 }, 0)).toEqual({ temperature: 0 });
    expect(temperatureFieldOf('google', { thinkingBudgetTokens: 2048 }, 0.3)).toEqual({ temperature: 0.3 });
    expect(temperatureFieldOf('openai', undefined, 0.2)).toEqual({ temperature: 0.2 });
  });
});
