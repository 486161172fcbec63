import { ValidationError } from '@keel/core';
import type { ProviderOptions } from '@keel/events';
import type { Provider } from './chat-models.js';

/** One of the options of `providerOptions`. */
export type ProviderOption = keyof ProviderOptions;

/**
 * Which options each provider can take (its LangChain client sends them): OpenAI has no thinking
 * budget, Anthropic and Google no reasoning effort, Ollama neither, the demo model nothing.
 */
export const PROVIDER_OPTION_SUPPORT: Record<Provider, readonly ProviderOption[]> = {
  openai: ['maxOutputTokens', 'reasoningEffort', 'topP'],
  anthropic: ['maxOutputTokens', 'thinkingBudgetTokens', 'topP'],
  google: ['maxOutputTokens', 'thinkingBudgetTokens', 'topP'],
  ollama: ['maxOutputTokens', 'topP'],
  demo: [],
};

/** The options set, in a fixed order. */
const setOptions = (options: ProviderOptions): ProviderOption[] =>
  (Object.keys(options) as ProviderOption[]).filter((key) => options[key] !== undefined).sort();

/** Refuses an option `provider` cannot take, naming it (`providerOptions.<option>`). */
export const checkProviderOptions = (provider: Provider, options: ProviderOptions): void => {
  const supported = PROVIDER_OPTION_SUPPORT[provider];
  const refused = setOptions(options).find((option) => !supported.includes(option));
  if (refused !== undefined) {
    throw new ValidationError(
      `providerOptions.${refused} cannot be used with provider "${provider}" (it takes: ${supported.join(', ') || 'none'})`,
      { field: `providerOptions.${refused}` },
    );
  }
};

/**
 * The LangChain client fields carrying `options` for `provider`; an option the provider cannot
 * take is left out (a fallback model of another provider gets what it can use).
 */
export const chatFieldsOf = (provider: Provider, options: ProviderOptions = {}): Record<string, unknown> => {
  const { maxOutputTokens, reasoningEffort, thinkingBudgetTokens, topP } = options;
  const top = topP === undefined ? {} : { topP };
  switch (provider) {
    case 'openai':
      return {
        ...(maxOutputTokens === undefined ? {} : { maxTokens: maxOutputTokens }),
        ...(reasoningEffort === undefined ? {} : { reasoning: { effort: reasoningEffort } }),
        ...top,
      };
    case 'anthropic':
      return {
        ...(maxOutputTokens === undefined ? {} : { maxTokens: maxOutputTokens }),
        ...(thinkingBudgetTokens === undefined
          ? {}
          : { thinking: { type: 'enabled', budget_tokens: thinkingBudgetTokens } }),
        ...top,
      };
    case 'google':
      return {
        ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
        ...(thinkingBudgetTokens === undefined
          ? {}
          : { thinkingConfig: { thinkingBudget: thinkingBudgetTokens } }),
        ...top,
      };
    case 'ollama':
      return { ...(maxOutputTokens === undefined ? {} : { numPredict: maxOutputTokens }), ...top };
    case 'demo':
      return {};
  }
};
