import { createHash } from 'node:crypto';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import type { AIMessageChunk } from '@langchain/core/messages';
import type { Runnable } from '@langchain/core/runnables';
import type { BuiltChatModel, ChatModelSettings, Provider } from './chat-models.js';
import { PLATFORM_VARIABLES, buildChatModel } from './chat-models.js';
import type { FunctionToolDefinition } from './langchain-messages.js';

/** How many chat models one model step keeps; default of `ChatModelCache`. */
const KEPT_MODELS = 256;

/** How many tool lists one kept model keeps bound (an agent offers a few: per phase, per user). */
const KEPT_TOOL_LISTS = 16;

/** A chat model bound to tools, as a model step streams it. */
export type ToolBoundModel = Runnable<BaseLanguageModelInput, AIMessageChunk>;

/** A kept model, and its bindings to the tool lists it was last called with (least recently used first). */
interface KeptModel {
  built: BuiltChatModel;
  bound: Map<string, ToolBoundModel>;
}

/**
 * The chat models of one model step, built once per (provider, model, key, endpoint, constructor
 * options) and reused by every call with the same: building a LangChain model and its provider's
 * HTTP client cost about as much as the rest of a call's client-side work.
 *
 * What keeps reuse exact: a model is keyed by everything it is constructed with (the tenant's key
 * and baseUrl, or the platform's key and endpoint as `env` has them now; temperature, retries,
 * provider options, the demo's word delay), so a call gets the model it would have built, and a
 * model never serves another key (the same key and endpoint is the same caller to the provider).
 * What varies per call stays per call: the abort signal (a call option) and the messages. The
 * tools are a binding over the shared model (`bindTools`, which does not change it), kept per
 * model and tool list (their JSON, as sent): OpenAI's `bindTools` builds a new chat model and
 * provider client each time, as costly as the model itself. A LangChain model, bound or not,
 * holds no per-call state, so concurrent calls may share it. The egress-guarded fetch is the
 * step's one instance, the same for every model this cache builds.
 *
 * Secrets: the map's keys are sha256 digests of those fields, never the key itself.
 */
export class ChatModelCache {
  /** By digest, least recently used first. */
  private readonly models = new Map<string, KeptModel>();

  constructor(private readonly capacity = KEPT_MODELS) {}

  /** The model `buildChatModel` would build for these, built at most once while kept. */
  modelFor(provider: Provider, model: string, settings: ChatModelSettings): BuiltChatModel {
    return this.kept(provider, model, settings).built;
  }

  /**
   * The model for these bound to `tools` (`bindTools`), bound at most once per tool list while
   * kept; a model that cannot bind tools throws.
   */
  boundFor(
    provider: Provider,
    model: string,
    settings: ChatModelSettings,
    tools: FunctionToolDefinition[],
  ): BuiltChatModel & { bound: ToolBoundModel } {
    const kept = this.kept(provider, model, settings);
    const { chat } = kept.built;
    if (!chat.bindTools) throw new Error(`the ${provider} chat model cannot bind tools`);
    const json = JSON.stringify(tools);
    const key = createHash('sha256').update(json).digest('hex');
    let bound = kept.bound.get(key);
    if (bound) kept.bound.delete(key);
    // Bound to a copy: the binding holds its tools, whatever becomes of the caller's objects.
    else bound = chat.bindTools(JSON.parse(json) as FunctionToolDefinition[]);
    remember(kept.bound, key, bound, KEPT_TOOL_LISTS);
    return { ...kept.built, bound };
  }

  private kept(provider: Provider, model: string, settings: ChatModelSettings): KeptModel {
    const key = digestOf(provider, model, settings);
    let kept = this.models.get(key);
    if (kept) {
      this.models.delete(key);
    } else {
      // A model that cannot be built (no key, a refused baseUrl) throws here and is not kept.
      kept = { built: buildChatModel(provider, model, settings), bound: new Map() };
    }
    remember(this.models, key, kept, this.capacity);
    return kept;
  }
}

/** Sets `key` as the most recently used entry of `map`, forgetting the least recently used past `capacity`. */
const remember = <T>(map: Map<string, T>, key: string, value: T, capacity: number): void => {
  map.set(key, value);
  if (map.size > capacity) map.delete(map.keys().next().value!);
};

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
