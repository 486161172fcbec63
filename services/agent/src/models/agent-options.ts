import { ValidationError } from '@keel/core';
import type { AgentOptions } from '@keel/events';
import { parseModelId } from '../model/chat-models.js';
import { checkProviderOptions, checkThinking } from '../model/provider-options.js';

/** Most fallback models an agent may list. */
export const MAX_FALLBACK_MODELS = 5;

/** Each fallback a `provider:model` of a known provider, neither the model itself nor listed twice. */
const checkFallbacks = (model: string, fallbacks: readonly string[]): void => {
  if (fallbacks.length > MAX_FALLBACK_MODELS) {
    throw new ValidationError(`fallbackModels lists at most ${MAX_FALLBACK_MODELS} models`, {
      field: 'fallbackModels',
    });
  }
  fallbacks.forEach((fallback, index) => {
    const field = `fallbackModels[${index}]`;
    try {
      parseModelId(fallback);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ValidationError(`${field}: ${reason}`, { field });
    }
    if (fallback === model || fallbacks.indexOf(fallback) !== index) {
      throw new ValidationError(`${field}: "${fallback}" is the agent's model or listed twice`, { field });
    }
  });
};

/** Each intent's tools among the agent's. */
const checkIntents = (options: AgentOptions, tools: readonly string[]): void =>
  (options.intents ?? []).forEach((intent, i) =>
    (intent.tools ?? []).forEach((tool, j) => {
      if (!tools.includes(tool)) {
        throw new ValidationError(`intents[${i}].tools[${j}]: "${tool}" is not one of the agent's tools`, {
          field: `intents[${i}].tools[${j}]`,
        });
      }
    }),
  );

/**
 * Checks an agent's model options against the models it may call (its model, then each fallback
 * in order): each provider option must be one every one of their providers can take, and
 * Anthropic's extended thinking must not meet the agent's own temperature or a topP
 * (`ownTemperature`: the agent's, undefined when it takes the tenant's default). Each fallback a
 * `provider:model` of a known provider, neither the model itself nor listed twice; intents name
 * the agent's tools. A refusal names the field (`fallbackModels[1]`) and, for an option, the model.
 */
export const checkAgentOptions = (
  model: string,
  options: AgentOptions,
  tools: readonly string[] = [],
  ownTemperature?: number,
): void => {
  const fallbacks = options.fallbackModels ?? [];
  checkFallbacks(model, fallbacks);
  checkIntents(options, tools);
  const providerOptions = options.providerOptions;
  if (!providerOptions) return;
  for (const each of [model, ...fallbacks]) {
    const { provider } = parseModelId(each);
    checkProviderOptions(each, provider, providerOptions);
    checkThinking(each, provider, providerOptions, ownTemperature);
  }
};

/**
 * The `options` of an agent definition from PutAgent's `optionsJson` (the gateway checked its
 * shape), checked against the model; `{}` when there are none.
 */
export const agentOptionsOf = (
  model: string,
  json: string,
  tools: readonly string[] = [],
  ownTemperature?: number,
): { options?: AgentOptions } => {
  if (json.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new ValidationError('agent.optionsJson must be a JSON object', { field: 'agent.optionsJson' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('agent.optionsJson must be a JSON object', { field: 'agent.optionsJson' });
  }
  const options = value as AgentOptions;
  checkAgentOptions(model, options, tools, ownTemperature);
  return Object.keys(options).length === 0 ? {} : { options };
};
