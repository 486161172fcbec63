import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ReplyScript } from './script.js';
import type { FakeChatRequest, FakeMatcher, FakeRecordedRequest, FakeReply } from './types.js';
import { describeRequest, flattenHeaders, parseChatRequest } from './request.js';
import { completionBody, errorBody, streamChunks, type FakeCompletionReply } from './wire.js';

/** Where the fake listens and which models `GET /v1/models` lists. */
export interface FakeOpenAIOptions {
  /** Default 0: any free port on 127.0.0.1. */
  port?: number;
  /** Ids listed by `GET /v1/models`; default `['gpt-4o-mini']`. */
  models?: string[];
}

/** An OpenAI-compatible HTTP server scripted per test, so tests drive the real client over real HTTP. */
export interface FakeOpenAI {
  /** Base URL ending in `/v1`: what `OPENAI_BASE_URL` or `configuration.baseURL` takes. */
  readonly url: string;
  /** Every HTTP request received, in arrival order; a record keeps updating until its connection closes. */
  readonly requests: readonly FakeRecordedRequest[];
  /** Queues replies for successive chat completions requests that no `on` matcher takes. */
  script(...replies: Array<FakeReply | string>): void;
  /** Queues replies for the requests `matcher` accepts, before the default queue: one script per conversation. */
  on(matcher: FakeMatcher, ...replies: Array<FakeReply | string>): void;
  /** How many scripted replies no request has consumed yet. */
  pendingReplies(): number;
  /** Resolves once request `index` (0-based) has arrived and the fake has chosen its reply. */
  waitForRequest(index: number, timeoutMs?: number): Promise<FakeRecordedRequest>;
  /** Resolves once the client has closed the connection of request `index` before its response was complete. */
  waitForClientClose(index: number, timeoutMs?: number): Promise<FakeRecordedRequest>;
  /** Forgets scripts and recorded requests, for a server shared by several tests. */
  reset(): void;
  /** Stops listening and drops open connections (hung or stalled responses included). */
  close(): Promise<void>;
}

type MutableRecord = { -readonly [K in keyof FakeRecordedRequest]: FakeRecordedRequest[K] };

const CHAT_PATH = '/v1/chat/completions';
const MODELS_PATH = '/v1/models';

/** Starts a fake OpenAI server on loopback; close it in `afterAll`. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const fake = new FakeOpenAIServer(options.models ?? ['gpt-4o-mini']);
  await fake.listen(options.port ?? 0);
  return fake;
}

class FakeOpenAIServer implements FakeOpenAI {
  private readonly server: Server;
  private readonly records: MutableRecord[] = [];
  private readonly replies = new ReplyScript();
  private readonly listeners = new Set<() => void>();
  private closing = false;
  private port = 0;

  constructor(private readonly models: string[]) {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  get requests(): readonly FakeRecordedRequest[] {
    return this.records;
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  script(...replies: Array<FakeReply | string>): void {
    this.replies.script(replies);
  }

  on(matcher: FakeMatcher, ...replies: Array<FakeReply | string>): void {
    this.replies.on(matcher, replies);
  }

  pendingReplies(): number {
    return this.replies.pending();
  }

  waitForRequest(index: number, timeoutMs = 5_000): Promise<FakeRecordedRequest> {
    return this.waitFor(
      () => {
        const record = this.records[index];
        return record && (record.reply !== undefined || record.closedAt !== undefined) ? record : undefined;
      },
      timeoutMs,
      () => `request #${index} did not arrive`,
    );
  }

  waitForClientClose(index: number, timeoutMs = 5_000): Promise<FakeRecordedRequest> {
    return this.waitFor(
      () => {
        const record = this.records[index];
        return record?.closedByClient ? record : undefined;
      },
      timeoutMs,
      () => {
        const record = this.records[index];
        if (!record) return `request #${index} never arrived, so the client could not close it`;
        if (record.closedAt !== undefined)
          return `request #${index} was closed only after its response finished`;
        return `the client did not close the connection of request #${index}`;
      },
    );
  }

  reset(): void {
    this.replies.clear();
    this.records.length = 0;
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    this.notify();
    await closed;
  }

  private waitFor(
    find: () => FakeRecordedRequest | undefined,
    timeoutMs: number,
    describe: () => string,
  ): Promise<FakeRecordedRequest> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found) settle(() => resolve(found));
        else if (this.closing)
          settle(() => reject(new Error(`fake-openai: closed while waiting: ${describe()}`)));
      };
      const timer = setTimeout(() => {
        const seen = this.records.map((r) => `#${r.index} ${r.method} ${r.path} (${r.reply ?? 'pending'})`);
        settle(() =>
          reject(
            new Error(
              `fake-openai: ${describe()} within ${timeoutMs} ms; requests so far: ${seen.join(', ') || 'none'}`,
            ),
          ),
        );
      }, timeoutMs);
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        outcome();
      };
      this.listeners.add(check);
      check();
    });
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const { authorization, ...headers } = flattenHeaders(req);
    const record: MutableRecord = {
      index: this.records.length,
      method: req.method ?? 'GET',
      path: new URL(req.url ?? '/', 'http://fake').pathname,
      body: undefined,
      rawBody: '',
      headers,
      authorization:
        authorization === undefined ? { present: false } : { present: true, last4: authorization.slice(-4) },
      reply: undefined,
      status: undefined,
      receivedAt: Date.now(),
      finishedAt: undefined,
      closedAt: undefined,
      closedByClient: false,
    };
    this.records.push(record);
    res.on('finish', () => {
      record.finishedAt = Date.now();
      this.notify();
    });
    res.on('close', () => {
      record.closedAt = Date.now();
      if (!res.writableFinished && !this.closing) record.closedByClient = true;
      this.notify();
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined); // a client that goes away mid-body shows up as closedByClient
    req.on('end', () => {
      record.rawBody = Buffer.concat(chunks).toString('utf8');
      this.route(record, res).catch((error: unknown) => {
        if (!res.headersSent)
          send(record, res, 500, errorBody(`fake-openai crashed: ${String(error)}`, 'server_error'), {
            'x-should-retry': 'false',
          });
        else res.destroy();
      });
    });
  }

  private async route(record: MutableRecord, res: ServerResponse): Promise<void> {
    const endpoint = `${record.method} ${record.path}`;
    if (endpoint === `GET ${MODELS_PATH}`) {
      record.reply = 'models';
      const created = Math.floor(record.receivedAt / 1000);
      const data = this.models.map((id) => ({ id, object: 'model', created, owned_by: 'fake-openai' }));
      return send(record, res, 200, { object: 'list', data });
    }
    if (endpoint !== `POST ${CHAT_PATH}`) {
      record.reply = 'invalid';
      const message = `fake-openai: unknown request URL: ${endpoint}; it serves POST ${CHAT_PATH} and GET ${MODELS_PATH}`;
      return send(record, res, 404, errorBody(message, 'invalid_request_error', 'unknown_url'));
    }
    const request = parseChatRequest(record.rawBody);
    if (typeof request === 'string') {
      record.reply = 'invalid';
      return send(record, res, 400, errorBody(`fake-openai: ${request}`, 'invalid_request_error'));
    }
    record.body = request;
    const reply = this.replies.take(request);
    if (!reply) {
      record.reply = 'unscripted';
      const message = `fake-openai: no scripted reply for request #${record.index} ${endpoint} (${describeRequest(request)}); script one with fake.script(...) or fake.on(...)`;
      // Printed too: a client that retries 500s (LangChain does, 6 times by default) would otherwise look stuck.
      console.warn(message);
      // x-should-retry stops the OpenAI SDK from retrying, so the test fails at once.
      return send(record, res, 500, errorBody(message, 'fake_openai_unscripted'), {
        'x-should-retry': 'false',
      });
    }
    record.reply = reply.kind;
    this.notify();
    switch (reply.kind) {
      case 'hang':
        return;
      case 'error': {
        const message = reply.message ?? `fake-openai: scripted error ${reply.status}`;
        const type = reply.type ?? (reply.status >= 500 ? 'server_error' : 'invalid_request_error');
        return send(record, res, reply.status, errorBody(message, type, reply.code ?? null), reply.headers);
      }
      case 'text':
      case 'tool_calls':
        if (request.stream === true) return this.stream(record, res, reply, request);
        return send(record, res, 200, completionBody(reply, request, context(record)));
      default: {
        const unknown: never = reply;
        throw new Error(`unknown fake reply ${JSON.stringify(unknown)}`);
      }
    }
  }

  private async stream(
    record: MutableRecord,
    res: ServerResponse,
    reply: FakeCompletionReply,
    request: FakeChatRequest,
  ): Promise<void> {
    const events = streamChunks(reply, request, context(record)).map(
      (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
    );
    events.push('data: [DONE]\n\n');
    record.status = 200;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-request-id': `req_fake_${record.index}`,
    });
    res.flushHeaders();
    const sent = Math.min(events.length, reply.stallAfterChunks ?? events.length);
    for (let i = 0; i < sent; i++) {
      if (i > 0 && reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      if (res.destroyed || this.closing) return;
      res.write(events[i]);
    }
    if (reply.stallAfterChunks === undefined) res.end();
  }
}

function context(record: FakeRecordedRequest) {
  return { requestIndex: record.index, created: Math.floor(record.receivedAt / 1000) };
}

function send(
  record: MutableRecord,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  record.status = status;
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-request-id': `req_fake_${record.index}`,
    ...headers,
  });
  res.end(JSON.stringify(body));
}
