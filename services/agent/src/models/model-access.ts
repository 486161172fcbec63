import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import type { Provider } from '../model/chat-models.js';
import { PROVIDERS } from '../model/chat-models.js';

/** The environment variable whose presence lets every tenant call a provider without its own key. */
const PLATFORM_KEYS: Record<Provider, string | undefined> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_API_KEY',
  // Ollama needs no key: the platform's server (OLLAMA_HOST) answers when it is set.
  ollama: 'OLLAMA_HOST',
  // The demo model runs in process: always callable.
  demo: undefined,
};

/**
 * The providers a tenant can call now, sorted: its own credentials (an API key, or an Ollama
 * baseUrl), else the platform's environment credential (mirrors `buildChatModel`'s endpoints).
 */
export const configuredProviders = (
  providers: TenantConfig['providers'],
  env: Record<string, string | undefined>,
): Provider[] =>
  PROVIDERS.filter((provider) => {
    const own = providers[provider];
    if (own?.apiKey || (provider === 'ollama' && own?.baseUrl)) return true;
    if (own?.baseUrl) return false; // a baseUrl without a key cannot be called (chat-models.ts)
    const variable = PLATFORM_KEYS[provider];
    return variable === undefined || Boolean(env[variable]);
  }).sort();
