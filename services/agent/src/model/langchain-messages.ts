import {
  AIMessage,
  type BaseMessage,
  type MessageContent,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from '@langchain/core/messages';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import type { CacheTextBlock } from './prompt-cache.js';
import { lastMessageBreakpoint, systemBlocks } from './prompt-cache.js';

/** A tool in the OpenAI function format, which every LangChain provider's `bindTools` accepts. */
export interface FunctionToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The tools as `bindTools` takes them: their JSON schemas as they are, no zod in between. */
export const toFunctionTools = (tools: PromptTool[]): FunctionToolDefinition[] =>
  tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
  }));

/**
 * The prompt as LangChain messages. Tool messages get the name of the call they answer (Google
 * requires it; the others ignore it).
 */
export const toLangChainMessages = (messages: PromptMessage[], cacheBreakpoints = false): BaseMessage[] => {
  const toolNames = new Map<string, string>();
  const last = cacheBreakpoints ? lastMessageBreakpoint(messages) : -1;
  return messages.map((message, index): BaseMessage => {
    const content = index === last ? cachedText(message.content) : message.content;
    switch (message.role) {
      case 'system':
        return new SystemMessage({
          content: cacheBreakpoints ? systemBlocks(message.content) : message.content,
        });
      case 'user':
        return new HumanMessage({ content });
      case 'assistant': {
        const toolCalls = (message.toolCalls ?? []).map((call) => {
          toolNames.set(call.id, call.name);
          return { id: call.id, name: call.name, args: argsObject(call.args), type: 'tool_call' as const };
        });
        return new AIMessage({ content, tool_calls: toolCalls });
      }
      case 'tool': {
        const name = toolNames.get(message.toolCallId);
        return new ToolMessage({
          content,
          tool_call_id: message.toolCallId,
          ...(name === undefined ? {} : { name }),
        });
      }
      default: {
        const unknown: never = message;
        throw new Error(`unknown prompt message ${JSON.stringify(unknown)}`);
      }
    }
  });
};

/** A message's text as one block with a cache breakpoint after it. */
const cachedText = (text: string): CacheTextBlock[] => [
  { type: 'text', text, cache_control: { type: 'ephemeral' } },
];

/**
 * Arguments of a past tool call as providers accept them back: an object. Arguments the model
 * sent as unparsable JSON are kept as a raw string in the conversation; they are replayed as `{}`
 * (Anthropic and Google reject anything but an object) and the tool result that follows, a
 * refusal naming the invalid arguments, tells the model what went wrong.
 */
const argsObject = (args: unknown): Record<string, unknown> => {
  if (isPlainObject(args)) return args;
  if (typeof args === 'string') {
    try {
      const parsed: unknown = JSON.parse(args);
      if (isPlainObject(parsed)) return parsed;
    } catch {
      // not JSON: replayed as {}
    }
  }
  return {};
};

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The text of a message content: a string as it is, or the `text` blocks of a content array
 * (Anthropic streams `[{ type: 'text', text }]` and `input_json_delta` blocks for tool arguments).
 */
export const textOf = (content: MessageContent): string => {
  if (typeof content === 'string') return content;
  let text = '';
  for (const block of content) {
    if (block.type === 'text' && typeof block['text'] === 'string') text += block['text'];
  }
  return text;
};
