/** Token counts a scripted reply reports; unset fields get a rough estimate from the text. */
export interface FakeUsage {
  promptTokens?: number;
  completionTokens?: number;
  /** Sent as `usage.prompt_tokens_details.cached_tokens`. */
  cachedTokens?: number;
}

/** How a successful reply is streamed (ignored by the non-stream JSON form except `usage` and `model`). */
export interface FakeStreamShape {
  /** Characters per `delta.content` chunk; default 4. */
  chunkSize?: number;
  /** Characters per `delta.tool_calls[].function.arguments` fragment; default 8. */
  argumentsChunkSize?: number;
  /** Pause before each SSE event after the first; default 0. */
  chunkDelayMs?: number;
  /** Send this many SSE events, then keep the connection open without finishing (stream only). */
  stallAfterChunks?: number;
  usage?: FakeUsage;
  /** The `model` field of the response; default: the requested model. */
  model?: string;
}

/** One tool call the fake model makes; `arguments` objects are sent as JSON, strings as they are. */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

/** The model answers with text (`finish_reason: 'stop'`). */
export interface FakeTextReply extends FakeStreamShape {
  kind: 'text';
  text: string;
}

/** The model calls one or several tools (`finish_reason: 'tool_calls'`), optionally after some text. */
export interface FakeToolCallsReply extends FakeStreamShape {
  kind: 'tool_calls';
  toolCalls: FakeToolCall[];
  text?: string;
}

/** The provider fails with an HTTP status and an OpenAI error body. */
export interface FakeErrorReply {
  kind: 'error';
  status: number;
  message?: string;
  type?: string;
  code?: string | null;
  /** Extra response headers, e.g. `{ 'retry-after': '0' }` or `{ 'x-should-retry': 'false' }`. */
  headers?: Record<string, string>;
}

/** The provider never answers (no status line): for timeout and abort tests. */
export interface FakeHangReply {
  kind: 'hang';
}

/** One scripted answer to one `POST /v1/chat/completions`. */
export type FakeReply = FakeTextReply | FakeToolCallsReply | FakeErrorReply | FakeHangReply;

/** A message as the client sent it (OpenAI chat completions wire format). */
export interface FakeChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string; [key: string]: unknown }> | null;
  name?: string;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

/** The body of a chat completions request as the client sent it. */
export interface FakeChatRequest {
  model: string;
  messages: FakeChatMessage[];
  tools?: Array<{
    type: string;
    function: { name: string; description?: string; parameters?: unknown; strict?: boolean | null };
  }>;
  tool_choice?: unknown;
  temperature?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  [key: string]: unknown;
}

/** Picks the requests a keyed script answers, e.g. by a marker in the system prompt. */
export type FakeMatcher = (request: FakeChatRequest) => boolean;

/** What the fake saw of one HTTP request, and how it ended. */
export interface FakeRecordedRequest {
  /** 0-based position among all requests this server received. */
  readonly index: number;
  readonly method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** The parsed body of a chat completions request; undefined for other requests or unparsable bodies. */
  readonly body: FakeChatRequest | undefined;
  readonly rawBody: string;
  /** Lower-cased request headers, without `authorization`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Whether an `authorization` header came, and its last 4 characters: never the whole key. */
  readonly authorization: { readonly present: boolean; readonly last4?: string };
  /** Which scripted reply answered it, `unscripted` for the 500, `invalid` for a 400/404. */
  readonly reply: FakeReply['kind'] | 'unscripted' | 'invalid' | 'models' | undefined;
  readonly status: number | undefined;
  /** `Date.now()` when the request arrived, when the response was fully sent, when the connection closed. */
  readonly receivedAt: number;
  readonly finishedAt: number | undefined;
  readonly closedAt: number | undefined;
  /** True when the client closed the connection before the response was fully sent. */
  readonly closedByClient: boolean;
}
