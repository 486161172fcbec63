import { ValidationError } from '@keel/core';
import type { AgentOptions } from '@keel/events';
import { parseModelId } from '../model/chat-models.js';
import { checkProviderOptions } from '../model/provider-options.js';

/** Most fallback models an agent may list. */
export const MAX_FALLBACK_MODELS = 5;

/**
 * Checks an agent's model options against its model: each provider option must be one the
 * model's provider can take, each fallback a `provider:model` of a known provider, neither the
 * model itself nor listed twice. A refusal names the field (`fallbackModels[1]`).
 */
export const checkAgentOptions = (
  model: string,
  options: AgentOptions,
  tools: readonly string[] = [],
): void => {
  const { provider } = parseModelId(model);
  if (options.providerOptions) checkProviderOptions(provider, options.providerOptions);
  const fallbacks = options.fallbackModels ?? [];
  if (fallbacks.length > MAX_FALLBACK_MODELS) {
    throw new ValidationError(`fallbackModels lists at most ${MAX_FALLBACK_MODELS} models`, {
      field: 'fallbackModels',
    });
  }
  (options.intents ?? []).forEach((intent, i) =>
    (intent.tools ?? []).forEach((tool, j) => {
      if (!tools.includes(tool)) {
        throw new ValidationError(`intents[${i}].tools[${j}]: "${tool}" is not one of the agent's tools`, {
          field: `intents[${i}].tools[${j}]`,
        });
      }
    }),
  );
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

/**
 * The `options` of an agent definition from PutAgent's `optionsJson` (the gateway checked its
 * shape), checked against the model; `{}` when there are none.
 */
export const agentOptionsOf = (
  model: string,
  json: string,
  tools: readonly string[] = [],
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
  checkAgentOptions(model, options, tools);
  return Object.keys(options).length === 0 ? {} : { options };
};
