import { ResourceExhaustedError, UnavailableError } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import type { ModelStep, ModelStepInput, ProviderCredentials } from './model-step.js';

/** Whether a failed call may go to the next model: the provider answered 429, 5xx or 408, or timed out or was unreachable. */
export const fallsBack = (error: unknown): boolean =>
  error instanceof ResourceExhaustedError || error instanceof UnavailableError;

/**
 * `step` with the input's fallbacks: the model first, then each fallback in order, while the call
 * fails in a way another provider may not (`fallsBack`). Never after a text delta was streamed
 * (the client saw the first model's words), nor after a cancel; the output names the model that
 * answered, so usage and cost are that model's.
 */
export const withFallbacks =
  (step: ModelStep): ModelStep =>
  async (input) => {
    const chain = [{ model: input.model, credentials: input.credentials }, ...(input.fallbacks ?? [])];
    for (let index = 0; ; index += 1) {
      let streamed = false;
      const attempt: ModelStepInput = {
        ...input,
        ...chain[index]!,
        fallbacks: [],
        // A model with a fallback after it is not retried in place: the fallback is the retry.
        retry: index === chain.length - 1,
        onDelta: (text) => {
          streamed = true;
          input.onDelta(text);
        },
      };
      try {
        return await step(attempt);
      } catch (error) {
        const last = index === chain.length - 1;
        if (last || streamed || input.signal.aborted || !fallsBack(error)) throw error;
      }
    }
  };

/** The model options of an agent's call: its provider options and its fallbacks with their credentials. */
export const modelOptionsOf = (
  agent: AgentDefinition,
  credentialsOf: (model: string) => ProviderCredentials,
): Pick<ModelStepInput, 'providerOptions' | 'fallbacks' | 'promptCache'> => {
  const options = agent.options;
  if (!options) return {};
  const fallbacks = (options.fallbackModels ?? []).map((model) => ({
    model,
    credentials: credentialsOf(model),
  }));
  return {
    ...(options.providerOptions ? { providerOptions: options.providerOptions } : {}),
    ...(fallbacks.length > 0 ? { fallbacks } : {}),
    ...(options.promptCache ? { promptCache: true } : {}),
  };
};
