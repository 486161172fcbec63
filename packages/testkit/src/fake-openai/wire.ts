import type {
  FakeChatMessage,
  FakeChatRequest,
  FakeTextReply,
  FakeToolCallsReply,
  FakeUsage,
} from './types.js';

/** A scripted reply that produces a completion (as opposed to an error or a hang). */
export type FakeCompletionReply = FakeTextReply | FakeToolCallsReply;

/** What a response needs from the request it answers. */
export interface ReplyContext {
  requestIndex: number;
  /** Seconds since the epoch, as OpenAI's `created`. */
  created: number;
}

/** The text of a message: its string content, or its text parts joined. */
export function messageText(message: FakeChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => part.text ?? '').join('');
  return '';
}

/** An OpenAI error body, `{ error: { message, type, param, code } }`. */
export function errorBody(message: string, type: string, code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

/** The chat.completion.chunk payloads of a streamed reply, in order, without the final `[DONE]`. */
export function streamChunks(reply: FakeCompletionReply, request: FakeChatRequest, context: ReplyContext) {
  const includeUsage = request.stream_options?.include_usage === true;
  const base = {
    id: completionId(context),
    object: 'chat.completion.chunk',
    created: context.created,
    model: reply.model ?? request.model,
    system_fingerprint: 'fp_fake',
  };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });

  const text = reply.text ?? '';
  const toolCalls = reply.kind === 'tool_calls' ? resolveToolCalls(reply, context) : [];
  const chunks: object[] = [];
  const role = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : '', refusal: null };
  let pendingRole: Record<string, unknown> | undefined = role;
  const withRole = (delta: Record<string, unknown>) => {
    const merged = pendingRole ? { ...pendingRole, ...delta } : delta;
    pendingRole = undefined;
    return merged;
  };

  if (text !== '') chunks.push(chunk(withRole({})));
  for (const piece of split(text, reply.chunkSize ?? 4)) chunks.push(chunk({ content: piece }));
  toolCalls.forEach((call, index) => {
    // The first delta of a call names it; later ones carry only its index and an arguments fragment.
    const header = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
    chunks.push(chunk(withRole({ tool_calls: [header] })));
    for (const fragment of split(call.arguments, reply.argumentsChunkSize ?? 8)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  });
  if (pendingRole) chunks.push(chunk(withRole({})));
  chunks.push(chunk({}, toolCalls.length > 0 ? 'tool_calls' : 'stop'));
  if (includeUsage)
    chunks.push({ ...base, choices: [], usage: usageOf(reply.usage, request, reply, toolCalls) });
  return chunks;
}

/** The `chat.completion` JSON of a reply to a request with `stream: false`. */
export function completionBody(reply: FakeCompletionReply, request: FakeChatRequest, context: ReplyContext) {
  const toolCalls = reply.kind === 'tool_calls' ? resolveToolCalls(reply, context) : [];
  const text = reply.text ?? '';
  const message = {
    role: 'assistant',
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
    annotations: [],
    ...(toolCalls.length > 0
      ? {
          tool_calls: toolCalls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      : {}),
  };
  return {
    id: completionId(context),
    object: 'chat.completion',
    created: context.created,
    model: reply.model ?? request.model,
    system_fingerprint: 'fp_fake',
    choices: [
      { index: 0, message, logprobs: null, finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop' },
    ],
    usage: usageOf(reply.usage, request, reply, toolCalls),
  };
}

interface ResolvedToolCall {
  id: string;
  name: string;
  arguments: string;
}

function resolveToolCalls(reply: FakeToolCallsReply, context: ReplyContext): ResolvedToolCall[] {
  return reply.toolCalls.map((call, index) => ({
    id: call.id ?? `call_fake_${context.requestIndex}_${index}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
}

function completionId(context: ReplyContext): string {
  return `chatcmpl-fake-${context.requestIndex}`;
}

function usageOf(
  usage: FakeUsage | undefined,
  request: FakeChatRequest,
  reply: FakeCompletionReply,
  toolCalls: ResolvedToolCall[],
) {
  const promptChars = request.messages.reduce((sum, message) => sum + messageText(message).length, 0);
  const completionChars = toolCalls.reduce(
    (sum, call) => sum + call.name.length + call.arguments.length,
    (reply.text ?? '').length,
  );
  const promptTokens = usage?.promptTokens ?? estimateTokens(promptChars);
  const completionTokens = usage?.completionTokens ?? estimateTokens(completionChars);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: usage?.cachedTokens ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** About four characters a token, and never zero: enough for tests that only need a plausible count. */
function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}

function split(text: string, size: number): string[] {
  const characters = Array.from(text);
  const step = Math.max(1, Math.floor(size));
  const pieces: string[] = [];
  for (let start = 0; start < characters.length; start += step) {
    pieces.push(characters.slice(start, start + step).join(''));
  }
  return pieces;
}
