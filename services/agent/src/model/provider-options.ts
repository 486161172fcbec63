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

/**
 * Refuses an option `model`'s provider cannot take, naming the option (`providerOptions.<option>`)
 * and the model: every model the agent may call (its model and each fallback) must take them all.
 */
export const checkProviderOptions = (model: string, provider: Provider, options: ProviderOptions): void => {
  const supported = PROVIDER_OPTION_SUPPORT[provider];
  const refused = setOptions(options).find((option) => !supported.includes(option));
  if (refused !== undefined) {
    throw new ValidationError(
      `providerOptions.${refused} cannot be used with ${model} (provider "${provider}" takes: ${supported.join(', ') || 'none'})`,
      { field: `providerOptions.${refused}`, details: { model } },
    );
  }
};

/** Whether `options` turn on Anthropic's extended thinking for `provider`. */
export const thinksOn = (provider: Provider, options: ProviderOptions = {}): boolean =>
  provider === 'anthropic' && options.thinkingBudgetTokens !== undefined;

/**
 * Anthropic's extended thinking takes no sampling settings (temperature stays 1, no top_p or
 * top_k; LangChain's ChatAnthropic refuses them) and its budget must stay below max_tokens. An
 * agent whose own fields conflict is refused naming the field; a temperature it takes from the
 * defaults is simply not sent (chatFieldsOf).
 */
export const checkThinking = (
  model: string,
  provider: Provider,
  options: ProviderOptions,
  ownTemperature: number | undefined,
): void => {
  if (!thinksOn(provider, options)) return;
  const { thinkingBudgetTokens: budget, maxOutputTokens, topP } = options;
  const refuse = (field: string, why: string): never => {
    throw new ValidationError(`${field}: ${why} (extended thinking on ${model})`, {
      field,
      details: { model },
    });
  };
  if (topP !== undefined) refuse('providerOptions.topP', 'cannot be used with thinkingBudgetTokens');
  if (ownTemperature !== undefined && ownTemperature !== 1) {
    refuse('temperature', 'must be 1 or left out with thinkingBudgetTokens');
  }
  if (maxOutputTokens !== undefined && budget! >= maxOutputTokens) {
    refuse('providerOptions.thinkingBudgetTokens', 'must be below providerOptions.maxOutputTokens');
  }
};

/**
 * The LangChain client fields carrying `options` for `provider`; an option the provider cannot
 * take is left out (a fallback model of another provider gets what it can use), and so is topP
 * under Anthropic's extended thinking (see checkThinking; the temperature: samplingOf).
 */
export const chatFieldsOf = (provider: Provider, options: ProviderOptions = {}): Record<string, unknown> => {
  const { maxOutputTokens, reasoningEffort, thinkingBudgetTokens, topP } = options;
  const top = topP === undefined || thinksOn(provider, options) ? {} : { topP };
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

/**
 * The sampling temperature a call to `provider` is built with: none under Anthropic's extended
 * thinking (the API keeps it at 1 and refuses another), else the agent's.
 */
export const temperatureFieldOf = (
  provider: Provider,
  options: ProviderOptions | undefined,
  temperature: number,
): { temperature?: number } => (thinksOn(provider, options) ? {} : { temperature });
