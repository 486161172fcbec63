// A fake Anthropic Messages API (`POST /v1/messages`) on loopback, scripted per test, so the real
// Anthropic client runs over real HTTP: it records every request body (cache_control included)
// and answers each with a scripted text and usage, cache reads and writes included.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer: its text and the usage the server reports. */
export interface FakeAnthropicReply {
  text: string;
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/** A request as the client sent it. */
export interface FakeAnthropicRequest {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The running fake. */
export interface FakeAnthropic {
  /** Base URL for the client (`anthropicApiUrl` / a tenant's `baseUrl`). */
  url: string;
  readonly requests: readonly FakeAnthropicRequest[];
  /** Queues replies for the next requests; without one the server answers `OK` with small usage. */
  script(...replies: FakeAnthropicReply[]): void;
  close(): Promise<void>;
}

const read = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/** The Messages stream of one reply, as Anthropic sends it (message_start carries the input usage). */
const streamEvents = (model: string, reply: FakeAnthropicReply): Array<Record<string, unknown>> => [
  {
    type: 'message_start',
    message: {
      id: `msg_${Date.now()}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: reply.inputTokens ?? 10,
        output_tokens: 1,
        cache_read_input_tokens: reply.cacheReadTokens ?? 0,
        cache_creation_input_tokens: reply.cacheWriteTokens ?? 0,
      },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: reply.text } },
  { type: 'content_block_stop', index: 0 },
  {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: reply.outputTokens ?? 5 },
  },
  { type: 'message_stop' },
];

const answer = (res: ServerResponse, model: string, reply: FakeAnthropicReply): void => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of streamEvents(model, reply))
    res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
};

/** Starts the fake on a free loopback port. Only streamed `POST /v1/messages` is served; anything else is 404. */
export const startFakeAnthropic = async (): Promise<FakeAnthropic> => {
  const requests: FakeAnthropicRequest[] = [];
  const queue: FakeAnthropicReply[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await read(req);
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method !== 'POST' || path !== '/v1/messages') {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"type":"error"}');
        return;
      }
      const body = JSON.parse(raw) as Record<string, unknown>;
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => k !== 'x-api-key' && k !== 'authorization'),
      ) as Record<string, string>;
      requests.push({ path, headers, body });
      answer(res, String(body.model ?? 'claude'), queue.shift() ?? { text: 'OK' });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...replies) => void queue.push(...replies),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
