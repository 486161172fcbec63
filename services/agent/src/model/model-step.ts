import type { ProviderOptions } from '@keel/events';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';

/** Credentials and endpoint for one provider, opened (in memory only) for a model call. */
export interface ProviderCredentials {
  apiKey?: string;
  baseUrl?: string;
}

/** One model call's input. */
export interface ModelStepInput {
  /** `provider:model`, e.g. `openai:gpt-4o-mini` or `demo:keel-demo`. */
  model: string;
  credentials: ProviderCredentials;
  messages: PromptMessage[];
  tools: PromptTool[];
  temperature: number;
  /** The agent's provider options, mapped to the provider's own fields (provider-options.ts). */
  providerOptions?: ProviderOptions;
  /** Models tried in order, each with its provider's credentials, when the call answers 429, 5xx or times out. */
  fallbacks?: Array<{ model: string; credentials: ProviderCredentials }>;
  /** Explicit cache breakpoints after the prompt's stable prefix, where the provider has them (Anthropic). */
  promptCache?: boolean;
  /** False: no retry of a failed request inside the call (a fallback model follows); default true. */
  retry?: boolean;
  /** Aborts the provider request (the HTTP connection closes). */
  signal: AbortSignal;
  /** Called with each text delta as it streams. */
  onDelta: (text: string) => void;
}

/** One model call's output, aggregated from the stream. */
export interface ModelStepOutput {
  text: string;
  toolCalls: Array<{ toolCallId: string; name: string; args: unknown }>;
  usage: {
    promptTokens: number;
    completionTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
  };
  /** The model id the provider reported (or the requested one). */
  model: string;
  /** Context window fill of this call, when known. */
  contextTokens: number;
}

/** Runs one streamed model call; the LangChain implementation lives in `langchain-model-step.ts`. */
export type ModelStep = (input: ModelStepInput) => Promise<ModelStepOutput>;
