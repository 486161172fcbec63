import { createHash } from 'node:crypto';
import type { BuiltChatModel, ChatModelSettings, Provider } from './chat-models.js';
import { PLATFORM_VARIABLES, buildChatModel } from './chat-models.js';

/** How many chat models one model step keeps; default of `ChatModelCache`. */
const KEPT_MODELS = 256;

/**
 * The chat models of one model step, built once per (provider, model, key, endpoint, constructor
 * options) and reused by every call with the same: building a LangChain model and its provider's
 * HTTP client cost about as much as the rest of a call's client-side work.
 *
 * What keeps reuse exact: a model is keyed by everything it is constructed with (the tenant's key
 * and baseUrl, or the platform's key and endpoint as `env` has them now; temperature, retries,
 * provider options, the demo's word delay), so a call gets the model it would have built, and a
 * model never serves another key (the same key and endpoint is the same caller to the provider).
 * What varies per call stays per call: the abort signal (a call option), the tools (`bindTools`,
 * a binding over the shared model, which it does not change) and the messages. A LangChain model
 * holds no per-call state, so concurrent calls may share it. The egress-guarded fetch is the
 * step's one instance, the same for every model this cache builds.
 *
 * Secrets: the map's keys are sha256 digests of those fields, never the key itself.
 */
export class ChatModelCache {
  /** By digest, least recently used first. */
  private readonly models = new Map<string, BuiltChatModel>();

  constructor(private readonly capacity = KEPT_MODELS) {}

  /** The model `buildChatModel` would build for these, built at most once while kept. */
  modelFor(provider: Provider, model: string, settings: ChatModelSettings): BuiltChatModel {
    const key = digestOf(provider, model, settings);
    let built = this.models.get(key);
    if (built) {
      this.models.delete(key);
    } else {
      // A model that cannot be built (no key, a refused baseUrl) throws here and is not kept.
      built = buildChatModel(provider, model, settings);
    }
    this.models.set(key, built);
    if (this.models.size > this.capacity) this.models.delete(this.models.keys().next().value!);
    return built;
  }
}

/** A digest of every field a model is built from (the environment's: only the provider's own variables). */
const digestOf = (provider: Provider, model: string, settings: ChatModelSettings): string => {
  const variables = Object.values(PLATFORM_VARIABLES[provider]) as string[];
  const options = Object.entries(settings.providerOptions ?? {})
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const fields = [
    provider,
    model,
    settings.credentials.apiKey ?? null,
    settings.credentials.baseUrl ?? null,
    variables.map((name) => settings.env[name] ?? null),
    settings.temperature,
    settings.maxRetries,
    settings.demoWordDelayMs,
    options,
  ];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
};
