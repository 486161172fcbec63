import { randomUUID } from 'node:crypto';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import type { AIMessageChunk } from '@langchain/core/messages';
import type { Runnable } from '@langchain/core/runnables';
import type { EgressPolicy } from '@keel/runtime';
import { createEgressFetch, egressDeniedIn, egressPolicyFromEnv } from '@keel/runtime';
import { ChatModelCache } from './chat-model-cache.js';
import type { ChatModelSettings } from './chat-models.js';
import { parseModelId } from './chat-models.js';
import { textOf, toFunctionTools, toLangChainMessages } from './langchain-messages.js';
import { withFallbacks } from './fallback-model-step.js';
import { abortError, raceAbort, toModelError } from './model-errors.js';
import type { ModelStep, ModelStepInput, ModelStepOutput } from './model-step.js';

/** Options of `createModelStep`; the defaults suit production. */
export interface ModelStepOptions {
  /** Where provider keys and endpoints come from when the tenant has none; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Retries of a failed provider request (5xx, network) inside one call; default 2. */
  maxRetries?: number;
  /** Pause between the demo model's streamed words, in milliseconds; default 0. */
  demoWordDelayMs?: number;
  /** What a tenant's provider `baseUrl` may reach; default `KEEL_EGRESS_ALLOW` of `env`. */
  egress?: EgressPolicy;
}

/**
 * The ModelStep on LangChain: calls the provider's chat model (`openai`, `anthropic`, `google`,
 * `ollama`, or `demo` which needs no key; built once per key and options, see ChatModelCache,
 * the tools bound per call), streams the answer and aggregates it. Rejects with an `AbortError`
 * once the signal aborts, with KeelErrors for provider failures, and never puts an API key in an
 * error message.
 */
export const createModelStep = (options: ModelStepOptions = {}): ModelStep => {
  const maxRetries = options.maxRetries ?? 2;
  const demoWordDelayMs = options.demoWordDelayMs ?? 0;
  const env = options.env ?? process.env;
  // One guarded fetch (one connection pool) for every call to a tenant's endpoint.
  const egressFetch = createEgressFetch({ policy: options.egress ?? egressPolicyFromEnv(env) });
  const models = new ChatModelCache();
  return withFallbacks(async (input) => {
    const { signal } = input;
    if (signal.aborted) throw abortError(signal);
    const { provider, model } = parseModelId(input.model);
    const settings: ChatModelSettings = {
      credentials: input.credentials,
      temperature: input.temperature,
      maxRetries: input.retry === false ? 0 : maxRetries,
      env,
      demoWordDelayMs,
      egressFetch,
      ...(input.providerOptions ? { providerOptions: input.providerOptions } : {}),
    };
    const { chat, bound, apiKey } =
      input.tools.length > 0
        ? models.boundFor(provider, model, settings, toFunctionTools(input.tools))
        : { ...models.modelFor(provider, model, settings), bound: undefined };
    const runnable: Runnable<BaseLanguageModelInput, AIMessageChunk> = bound ?? chat;
    try {
      const stream = await raceAbort(
        runnable.stream(
          toLangChainMessages(input.messages, input.promptCache === true && provider === 'anthropic'),
          {
            signal,
          },
        ),
        signal,
      );
      return await aggregate(stream, input, provider);
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      // A refused tenant endpoint: the guard's own error, whatever the SDK wrapped it in.
      throw egressDeniedIn(error) ?? toModelError(error, provider, [apiKey]);
    }
  });
};

/** Reads the stream to its end, forwarding text deltas, and sums it up as the port's output. */
const aggregate = async (
  stream: AsyncIterable<AIMessageChunk>,
  input: ModelStepInput,
  provider: string,
): Promise<ModelStepOutput> => {
  const { signal } = input;
  const iterator = stream[Symbol.asyncIterator]();
  let full: AIMessageChunk | undefined;
  let text = '';
  let reportedModel: string | undefined;
  try {
    for (;;) {
      const next = await raceAbort(iterator.next(), signal);
      if (next.done) break;
      const chunk = next.value;
      const delta = textOf(chunk.content);
      if (delta !== '') {
        text += delta;
        input.onDelta(delta);
      }
      reportedModel = modelNameOf(chunk) ?? reportedModel;
      full = full ? full.concat(chunk) : chunk;
    }
  } catch (error) {
    // Closes the provider's stream (and its HTTP connection) when the signal did not already.
    iterator.return?.().catch(() => undefined);
    throw error;
  }
  const usage = full?.usage_metadata;
  const inputTokens = usage?.input_tokens ?? 0;
  return {
    text,
    toolCalls: full ? toolCallsOf(full) : [],
    usage: {
      promptTokens: inputTokens,
      completionTokens: usage?.output_tokens ?? 0,
      cacheReadTokens: usage?.input_token_details?.cache_read ?? 0,
      cacheWriteTokens: usage?.input_token_details?.cache_creation ?? 0,
    },
    model: reportedModel ? `${provider}:${reportedModel}` : input.model,
    contextTokens: inputTokens,
  };
};

/** The model a chunk says answered (`model_name` for OpenAI, Google, Ollama; `model` for Anthropic). */
const modelNameOf = (chunk: AIMessageChunk): string | undefined => {
  const metadata = chunk.response_metadata as Record<string, unknown> | undefined;
  const name = metadata?.['model_name'] ?? metadata?.['model'] ?? chunk.additional_kwargs?.['model'];
  return typeof name === 'string' && name !== '' ? name : undefined;
};

/**
 * The tool calls of the aggregated answer, in order. Arguments are read from the raw streamed
 * JSON when the provider streams it, with a strict `JSON.parse`: LangChain's own parse is lenient
 * (it completes truncated JSON) and moves unparsable calls to `invalid_tool_calls`. A call whose
 * arguments do not parse comes back with the raw string as `args`, for the guard to refuse.
 */
const toolCallsOf = (full: AIMessageChunk): ModelStepOutput['toolCalls'] => {
  const chunks = full.tool_call_chunks ?? [];
  if (chunks.length > 0) {
    return chunks.map((chunk) => ({
      toolCallId: chunk.id || randomUUID(),
      name: chunk.name ?? '',
      args: parseArgs(chunk.args ?? ''),
    }));
  }
  return [
    ...(full.tool_calls ?? []).map((call) => ({
      toolCallId: call.id || randomUUID(),
      name: call.name,
      args: call.args as unknown,
    })),
    ...(full.invalid_tool_calls ?? []).map((call) => ({
      toolCallId: call.id || randomUUID(),
      name: call.name ?? '',
      args: parseArgs(call.args ?? ''),
    })),
  ];
};

/** Parsed JSON arguments; `{}` for none (a call of a tool without parameters); the raw string when invalid. */
const parseArgs = (raw: string): unknown => {
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
};
