import { ValidationError } from '@keel/core';
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import { ChatOllama } from '@langchain/ollama';
import { ChatOpenAI } from '@langchain/openai';
import { DEMO_MODEL_NAME, DemoChatModel } from './demo-chat-model.js';
import type { ProviderCredentials } from './model-step.js';
import type { ProviderOptions } from '@keel/events';
import { chatFieldsOf, temperatureFieldOf } from './provider-options.js';

/** The providers a `provider:model` id may name. */
export const PROVIDERS = ['openai', 'anthropic', 'google', 'ollama', 'demo'] as const;

/** One of `PROVIDERS`. */
export type Provider = (typeof PROVIDERS)[number];

/** Splits `provider:model` (the model part may hold colons, as Ollama tags do: `ollama:llama3.2:3b`). */
export const parseModelId = (id: string): { provider: Provider; model: string } => {
  const colon = id.indexOf(':');
  const provider = id.slice(0, colon);
  const model = id.slice(colon + 1);
  if (colon <= 0 || model === '') {
    throw new ValidationError(`model "${id}" must be "provider:model", e.g. "openai:gpt-4o-mini"`, {
      field: 'model',
    });
  }
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    throw new ValidationError(`unknown model provider "${provider}"; known: ${PROVIDERS.join(', ')}`, {
      field: 'model',
    });
  }
  return { provider: provider as Provider, model };
};

/** What building a chat model needs besides the model id. */
export interface ChatModelSettings {
  credentials: ProviderCredentials;
  temperature: number;
  maxRetries: number;
  env: Record<string, string | undefined>;
  /** Pause between the demo model's words, in milliseconds. */
  demoWordDelayMs: number;
  /**
   * The egress-guarded fetch (`createEgressFetch`) every call to a tenant's `baseUrl` goes
   * through; without it a tenant `baseUrl` is refused.
   */
  egressFetch?: typeof fetch;
  /** The agent's provider options; what the provider cannot take is left out. */
  providerOptions?: ProviderOptions;
}

/** The environment variables of each provider's platform key and endpoint (`env` of the settings). */
export const PLATFORM_VARIABLES = {
  openai: { key: 'OPENAI_API_KEY', base: 'OPENAI_BASE_URL' },
  anthropic: { key: 'ANTHROPIC_API_KEY', base: 'ANTHROPIC_BASE_URL' },
  google: { key: 'GOOGLE_API_KEY', base: 'GOOGLE_BASE_URL' },
  ollama: { base: 'OLLAMA_HOST' },
  demo: {},
} as const satisfies Record<Provider, { key?: string; base?: string }>;

/** Where one provider call goes, with which key, and through which fetch. */
interface Endpoint {
  apiKey: string;
  /** Undefined: the provider's default. */
  baseUrl: string | undefined;
  /** Set for a tenant's endpoint: the egress guard. */
  fetch: typeof fetch | undefined;
}

/**
 * The endpoint of a provider that needs a key. A tenant's `baseUrl` goes with the tenant's key
 * only, through the egress guard; the platform's key (`keyVariable`) only ever goes to the
 * platform's endpoint (`baseVariable`, else the provider's default). A `baseUrl` stored without
 * a key (before PUT refused that) fails the call naming the tenant's provider config.
 */
const endpointOf = (provider: 'openai' | 'anthropic' | 'google', settings: ChatModelSettings): Endpoint => {
  const { key: keyVariable, base: baseVariable } = PLATFORM_VARIABLES[provider];
  const { apiKey, baseUrl } = settings.credentials;
  if (baseUrl) {
    if (!apiKey) {
      throw new ValidationError(
        `the tenant's ${provider} provider config sets a baseUrl without an apiKey: PUT /v1/providers/${provider} with both, or without baseUrl`,
        { field: 'apiKey', details: { provider } },
      );
    }
    return { apiKey, baseUrl, fetch: tenantFetch(provider, settings) };
  }
  const key = apiKey || settings.env[keyVariable];
  if (!key) {
    throw new ValidationError(
      `no API key for provider "${provider}": configure the tenant's ${provider} credentials or set ${keyVariable}`,
      { field: 'credentials.apiKey', details: { provider, variable: keyVariable } },
    );
  }
  return { apiKey: key, baseUrl: settings.env[baseVariable] || undefined, fetch: undefined };
};

/** The guarded fetch for a tenant's endpoint; refuses the call when there is none to guard it. */
const tenantFetch = (provider: Provider, settings: ChatModelSettings): typeof fetch => {
  if (!settings.egressFetch) {
    throw new ValidationError(`the tenant's ${provider} baseUrl cannot be called without the egress guard`, {
      field: 'baseUrl',
      details: { provider },
    });
  }
  return settings.egressFetch;
};

/** A chat model, and the key it calls with. */
export type BuiltChatModel = { chat: BaseChatModel; apiKey: string | undefined };

/** What every provider's client is built with: streaming, usage reported, the agent's temperature and retries. */
const streamingWithUsage = (provider: Provider, settings: ChatModelSettings) => ({
  streaming: true,
  streamUsage: true,
  ...temperatureFieldOf(provider, settings.providerOptions, settings.temperature),
  maxRetries: settings.maxRetries,
  ...chatFieldsOf(provider, settings.providerOptions),
});

const openAiModel = (model: string, settings: ChatModelSettings): BuiltChatModel => {
  const { apiKey, baseUrl: baseURL, fetch } = endpointOf('openai', settings);
  const chat = new ChatOpenAI({
    model,
    apiKey,
    configuration: { ...(baseURL ? { baseURL } : {}), ...(fetch ? { fetch } : {}) },
    ...streamingWithUsage('openai', settings),
  });
  return { chat, apiKey };
};

/** The answer's room above an Anthropic thinking budget when max_tokens must be raised past it. */
export const THINKING_ANSWER_TOKENS = 4_096;

const anthropicModel = (model: string, settings: ChatModelSettings): BuiltChatModel => {
  const { apiKey, baseUrl, fetch } = endpointOf('anthropic', settings);
  const chat = new ChatAnthropic({
    model,
    apiKey,
    ...(baseUrl ? { anthropicApiUrl: baseUrl } : {}),
    ...(fetch ? { clientOptions: { fetch } } : {}),
    ...streamingWithUsage('anthropic', settings),
  });
  // Anthropic takes a thinking budget only below max_tokens: LangChain's default max_tokens for
  // the model (16,384 for claude-sonnet-4-5) may not be, when the agent sets no maxOutputTokens.
  const budget = settings.providerOptions?.thinkingBudgetTokens;
  if (
    budget !== undefined &&
    settings.providerOptions?.maxOutputTokens === undefined &&
    chat.maxTokens <= budget
  ) {
    chat.maxTokens = budget + THINKING_ANSWER_TOKENS;
  }
  return { chat, apiKey };
};

const googleModel = (model: string, settings: ChatModelSettings): BuiltChatModel => {
  // The Google client always calls the global fetch: a tenant endpoint could not be guarded.
  if (settings.credentials.baseUrl) {
    throw new ValidationError(
      "the tenant's google provider config sets a baseUrl, which the Google client cannot call through the egress guard: PUT /v1/providers/google without baseUrl",
      { field: 'baseUrl', details: { provider: 'google' } },
    );
  }
  const { apiKey, baseUrl } = endpointOf('google', settings);
  const chat = new ChatGoogleGenerativeAI({
    model,
    apiKey,
    ...(baseUrl ? { baseUrl } : {}),
    ...streamingWithUsage('google', settings),
  });
  return { chat, apiKey };
};

const ollamaModel = (model: string, settings: ChatModelSettings): BuiltChatModel => {
  const { credentials, env } = settings;
  // Ollama has no platform key: a tenant's server may go without one, but through the guard.
  const tenant = credentials.baseUrl ? withScheme(credentials.baseUrl) : undefined;
  const baseUrl = tenant ?? withScheme(env[PLATFORM_VARIABLES.ollama.base] || 'http://127.0.0.1:11434');
  const fetch = tenant
    ? withTenantAuthorization(tenantFetch('ollama', settings), credentials.apiKey)
    : undefined;
  const chat = new ChatOllama({
    model,
    baseUrl,
    ...(fetch ? { fetch } : {}),
    streaming: true,
    temperature: settings.temperature,
    maxRetries: settings.maxRetries,
    ...chatFieldsOf('ollama', settings.providerOptions),
  });
  return { chat, apiKey: credentials.apiKey };
};

const demoModel = (model: string, settings: ChatModelSettings): BuiltChatModel => {
  if (model !== DEMO_MODEL_NAME) {
    throw new ValidationError(`the demo provider has one model: "demo:${DEMO_MODEL_NAME}"`, {
      field: 'model',
    });
  }
  return { chat: new DemoChatModel({ wordDelayMs: settings.demoWordDelayMs }), apiKey: undefined };
};

/** The LangChain chat model for one call, streaming with usage reported. */
export const buildChatModel = (
  provider: Provider,
  model: string,
  settings: ChatModelSettings,
): BuiltChatModel => {
  switch (provider) {
    case 'openai':
      return openAiModel(model, settings);
    case 'anthropic':
      return anthropicModel(model, settings);
    case 'google':
      return googleModel(model, settings);
    case 'ollama':
      return ollamaModel(model, settings);
    case 'demo':
      return demoModel(model, settings);
    default: {
      const unknown: never = provider;
      throw new ValidationError(`unknown model provider ${String(unknown)}`, { field: 'model' });
    }
  }
};

/**
 * A tenant's Ollama calls carry the tenant's key (Bearer) or none: the Ollama client would add
 * the environment's `OLLAMA_API_KEY` on its own for https://ollama.com.
 */
const withTenantAuthorization =
  (guarded: typeof fetch, apiKey: string | undefined): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.delete('authorization');
    if (apiKey) headers.set('authorization', `Bearer ${apiKey}`);
    return guarded(input, { ...init, headers });
  };

/** `OLLAMA_HOST` is often `host:port` without a scheme; the client needs a URL. */
const withScheme = (host: string): string => (/^https?:\/\//i.test(host) ? host : `http://${host}`);
