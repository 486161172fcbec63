import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput, ToolDefinition } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BaseChatModelParams,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import {
  AIMessage,
  AIMessageChunk,
  type BaseMessage,
  type UsageMetadata,
  isAIMessage,
  isToolMessage,
} from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { demoReply, estimateTokens, wordsOf, type DemoMessage, type DemoReply } from './demo-reply.js';

/** The demo model's name; its model id is `demo:keel-demo`. */
export const DEMO_MODEL_NAME = 'keel-demo';

/** Call options of the demo model: the tools `bindTools` bound, in the OpenAI function format. */
export interface DemoChatModelCallOptions extends BaseChatModelCallOptions {
  tools?: ToolDefinition[];
}

/** Construction options of the demo model. */
export interface DemoChatModelInput extends BaseChatModelParams {
  /** Pause before each streamed word after the first, so a UI shows streaming; default 0. */
  wordDelayMs?: number;
}

/**
 * A deterministic chat model with tool calling, so the platform runs end to end without any API
 * key (dev mode, demos). It is a real LangChain chat model: it streams `AIMessageChunk`s, binds
 * tools and reports usage like the provider models, and says it is a demo in every answer.
 */
export class DemoChatModel extends BaseChatModel<DemoChatModelCallOptions> {
  static override lc_name(): string {
    return 'DemoChatModel';
  }

  readonly wordDelayMs: number;

  constructor(fields: DemoChatModelInput = {}) {
    super(fields);
    this.wordDelayMs = fields.wordDelayMs ?? 0;
  }

  _llmType(): string {
    return 'keel-demo';
  }

  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<DemoChatModelCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, DemoChatModelCallOptions> {
    return this.withConfig({ ...kwargs, tools: tools.map((tool) => convertToOpenAITool(tool)) });
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    let final: ChatGenerationChunk | undefined;
    for await (const chunk of this._streamResponseChunks(messages, options, runManager)) {
      final = final ? final.concat(chunk) : chunk;
    }
    const message = final?.message as AIMessageChunk | undefined;
    const aggregated = new AIMessage({
      content: message?.content ?? '',
      tool_calls: message?.tool_calls ?? [],
      ...(message?.usage_metadata ? { usage_metadata: message.usage_metadata } : {}),
      response_metadata: message?.response_metadata ?? {},
    });
    return { generations: [{ text: final?.text ?? '', message: aggregated }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const signal = options.signal;
    signal?.throwIfAborted();
    const read = messages.map(toDemoMessage);
    const tools = (options.tools ?? []).map((tool) => tool.function.name);
    const reply = demoReply(read, tools);
    const inputChars = read.reduce((sum, m) => sum + m.text.length, 0);

    if (reply.kind === 'text') {
      let index = 0;
      for (const word of wordsOf(reply.text)) {
        if (index++ > 0 && this.wordDelayMs > 0) await sleep(this.wordDelayMs, undefined, { signal });
        signal?.throwIfAborted();
        const chunk = new ChatGenerationChunk({ text: word, message: new AIMessageChunk({ content: word }) });
        yield chunk;
        await runManager?.handleLLMNewToken(word, undefined, undefined, undefined, undefined, { chunk });
      }
    } else {
      const id = toolCallId(read, reply);
      yield new ChatGenerationChunk({
        text: '',
        message: new AIMessageChunk({
          content: '',
          tool_call_chunks: [
            { id, name: reply.name, args: JSON.stringify(reply.args), index: 0, type: 'tool_call_chunk' },
          ],
        }),
      });
    }

    const outputChars =
      reply.kind === 'text' ? reply.text.length : reply.name.length + JSON.stringify(reply.args).length;
    yield new ChatGenerationChunk({
      text: '',
      message: new AIMessageChunk({
        content: '',
        usage_metadata: usage(estimateTokens(inputChars), estimateTokens(outputChars)),
        response_metadata: {
          model_name: DEMO_MODEL_NAME,
          finish_reason: reply.kind === 'text' ? 'stop' : 'tool_calls',
        },
      }),
    });
  }
}

const usage = (input: number, output: number): UsageMetadata => ({
  input_tokens: input,
  output_tokens: output,
  total_tokens: input + output,
  input_token_details: { cache_read: 0, cache_creation: 0 },
});

const toDemoMessage = (message: BaseMessage): DemoMessage => {
  const text = message.text;
  if (isToolMessage(message)) {
    return {
      role: 'tool',
      text,
      toolCallId: message.tool_call_id,
      ...(message.name ? { name: message.name } : {}),
    };
  }
  if (isAIMessage(message)) {
    const toolCalls = (message.tool_calls ?? []).map((call) => ({ id: call.id ?? '', name: call.name }));
    return { role: 'assistant', text, toolCalls };
  }
  const type = message.type;
  return { role: type === 'human' ? 'user' : type === 'system' ? 'system' : 'other', text };
};

/**
 * The same conversation always gets the same id (the demo is deterministic); a different
 * conversation or a later step of the same one gets another, so ids do not repeat within a
 * conversation. Two conversations with identical transcripts do share ids.
 */
const toolCallId = (messages: DemoMessage[], reply: Extract<DemoReply, { kind: 'tool_call' }>): string => {
  const hash = createHash('sha256')
    .update(JSON.stringify([messages.map((m) => [m.role, m.text, m.toolCallId ?? '']), reply.name]))
    .digest('hex');
  return `demo_call_${hash.slice(0, 24)}`;
};
