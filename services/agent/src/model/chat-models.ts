import { ValidationError } from '@keel/core';
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import { ChatOllama } from '@langchain/ollama';
import { ChatOpenAI } from '@langchain/openai';
import { DEMO_MODEL_NAME, DemoChatModel } from './demo-chat-model.js';
import type { ProviderCredentials } from './model-step.js';

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
}

/** The API key of a provider that needs one: the tenant's, else the environment's, else a clear error. */
const requireKey = (provider: Provider, variable: string, settings: ChatModelSettings): string => {
  const apiKey = settings.credentials.apiKey || settings.env[variable];
  if (!apiKey) {
    throw new ValidationError(
      `no API key for provider "${provider}": configure the tenant's ${provider} credentials or set ${variable}`,
      { field: 'credentials.apiKey', details: { provider, variable } },
    );
  }
  return apiKey;
};

/** The LangChain chat model for one call, streaming with usage reported. */
export const buildChatModel = (
  provider: Provider,
  model: string,
  settings: ChatModelSettings,
): { chat: BaseChatModel; apiKey: string | undefined } => {
  const { credentials, temperature, maxRetries, env } = settings;
  switch (provider) {
    case 'openai': {
      const apiKey = requireKey(provider, 'OPENAI_API_KEY', settings);
      const baseURL = credentials.baseUrl || env['OPENAI_BASE_URL'];
      const chat = new ChatOpenAI({
        model,
        apiKey,
        configuration: baseURL ? { baseURL } : {},
        streaming: true,
        streamUsage: true,
        temperature,
        maxRetries,
      });
      return { chat, apiKey };
    }
    case 'anthropic': {
      const apiKey = requireKey(provider, 'ANTHROPIC_API_KEY', settings);
      const baseUrl = credentials.baseUrl || env['ANTHROPIC_BASE_URL'];
      const chat = new ChatAnthropic({
        model,
        apiKey,
        ...(baseUrl ? { anthropicApiUrl: baseUrl } : {}),
        streaming: true,
        streamUsage: true,
        temperature,
        maxRetries,
      });
      return { chat, apiKey };
    }
    case 'google': {
      const apiKey = requireKey(provider, 'GOOGLE_API_KEY', settings);
      const baseUrl = credentials.baseUrl || env['GOOGLE_BASE_URL'];
      const chat = new ChatGoogleGenerativeAI({
        model,
        apiKey,
        ...(baseUrl ? { baseUrl } : {}),
        streaming: true,
        streamUsage: true,
        temperature,
        maxRetries,
      });
      return { chat, apiKey };
    }
    case 'ollama': {
      const baseUrl = withScheme(credentials.baseUrl || env['OLLAMA_HOST'] || 'http://127.0.0.1:11434');
      const chat = new ChatOllama({ model, baseUrl, streaming: true, temperature, maxRetries });
      return { chat, apiKey: credentials.apiKey };
    }
    case 'demo': {
      if (model !== DEMO_MODEL_NAME) {
        throw new ValidationError(`the demo provider has one model: "demo:${DEMO_MODEL_NAME}"`, {
          field: 'model',
        });
      }
      return { chat: new DemoChatModel({ wordDelayMs: settings.demoWordDelayMs }), apiKey: undefined };
    }
    default: {
      const unknown: never = provider;
      throw new ValidationError(`unknown model provider ${String(unknown)}`, { field: 'model' });
    }
  }
};

/** `OLLAMA_HOST` is often `host:port` without a scheme; the client needs a URL. */
const withScheme = (host: string): string => (/^https?:\/\//i.test(host) ? host : `http://${host}`);
