// The gateway's public gRPC API (keel.conversations.v1.ConversationService) with the gateway, the
// agent and the tools service as separate processes on real NATS and MongoDB, the model played by
// the fake OpenAI server and the tool by the e2e webhook server: the same scripted turn streamed
// over HTTP SSE and over gRPC SendMessage gives the same events (names, data, ids), approval
// included; a caller that goes away does not stop its turn; keys, roles and tenants are refused
// with the typed statuses API.md and the proto promise.
import type { ClientReadableStream, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, Metadata, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, startFakeOpenAI, startProcess, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { platformEnv, startAgent, startGateway, startTools } from './support/platform.js';
import { startWebhookServer } from './support/webhook-server.js';

const OPERATOR_KEY = `op_${uniqueName('gwgrpc')}`;

/** One frame as a client sees it: id, event name, data (from SSE, or rebuilt from a TurnEvent). */
interface Frame {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

type Callback = (error: ServiceError | null, response?: unknown) => void;
type RawClient = Record<
  string,
  (
    request: object,
    metadata: Metadata,
    callback: Callback,
  ) => { on(event: 'metadata', listener: (m: Metadata) => void): void }
> & {
  sendMessage(request: object, metadata: Metadata): ClientReadableStream<Record<string, unknown>>;
  close(): void;
};

/** A client of `service` (e.g. `conversations.v1.ConversationService`) at `address`, metadata per call. */
const grpcClient = (address: string, protoFile: string, service: string) => {
  const definition = loadSync(protoFile, { ...PROTO_LOADER_OPTIONS, includeDirs: [protoRoot()] });
  const [area, version, name] = service.split('.') as [string, string, string];
  const root = loadPackageDefinition(definition) as unknown as {
    keel: Record<string, Record<string, Record<string, ServiceClientConstructor>>>;
  };
  const raw = new root.keel[area]![version]![name]!(
    address,
    credentials.createInsecure(),
  ) as unknown as RawClient;
  const metadataOf = (key: string | undefined, extra: Record<string, string> = {}) => {
    const metadata = new Metadata();
    if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
    for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
    return metadata;
  };
  const unary = <T = Record<string, unknown>>(
    method: string,
    key: string | undefined,
    request: object,
    extra: Record<string, string> = {},
  ): Promise<T> =>
    new Promise((resolve, reject) => {
      raw[method]!(request, metadataOf(key, extra), (error, response) =>
        error ? reject(error) : resolve(response as T),
      );
    });
  /** The response headers (initial metadata) of a unary call. */
  const headersOf = (method: string, key: string, request: object, extra: Record<string, string>) =>
    new Promise<Metadata>((resolve, reject) => {
      raw[method]!(request, metadataOf(key, extra), (error) => error && reject(error)).on(
        'metadata',
        resolve,
      );
    });
  const stream = (key: string | undefined, request: object) => raw.sendMessage(request, metadataOf(key));
  return { unary, headersOf, stream, close: () => raw.close() };
};

/** A ConversationService client on the gateway's gRPC port. */
const conversationsClient = (address: string) =>
  grpcClient(address, 'keel/conversations/v1/conversations.proto', 'conversations.v1.ConversationService');

/** A PricingService client (on the gateway's port, or the pricing service's own). */
const pricingClient = (address: string) =>
  grpcClient(address, 'keel/pricing/v1/pricing.proto', 'pricing.v1.PricingService');

/** The status code a gRPC call failed with. */
const codeOf = async (call: Promise<unknown>): Promise<number | undefined> => {
  try {
    await call;
    return undefined;
  } catch (error) {
    return (error as ServiceError).code;
  }
};

/** A TurnEvent as the SSE frame it stands for: payload fields back to API.md's JSON. */
const frameOfTurnEvent = (event: Record<string, unknown>): Frame => {
  const payload = event[event.payload as string] as Record<string, unknown>;
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    // proto-loader names the set member of a proto3 `optional` in `_<field>`: not data.
    if (key.startsWith('_')) continue;
    if (key === 'argsJson') data.args = JSON.parse(value as string);
    else if (key === 'resultJson') data.result = JSON.parse(value as string);
    else if (key === 'decision') data.decision = (value as string).replace('DECISION_', '').toLowerCase();
    else data[key] = value;
  }
  return { id: event.id as string, event: event.event as string, data };
};

/** Data fields whose values differ from one turn to the next (fresh ids): numbered by first appearance. */
const VOLATILE = ['turnId', 'toolCallId', 'approvalId', 'messageId'];

/**
 * Frames with fresh ids replaced by `<field>#n`, and the proto's forms of what JSON says otherwise: an
 * unknown cost left out, an unknown context window 0, a tool error as its text.
 */
const normalise = (frames: Frame[]): Frame[] => {
  const seen = new Map<string, string>();
  return frames.map((frame) => {
    const data = { ...frame.data };
    for (const field of VOLATILE) {
      const value = data[field];
      if (typeof value !== 'string') continue;
      if (!seen.has(value)) seen.set(value, `${field}#${seen.size}`);
      data[field] = seen.get(value);
    }
    if (data.costUsd === null) delete data.costUsd;
    // The proto says 0 where SSE says null: a model whose context window is unknown.
    if (frame.event === 'context' && data.windowTokens === null) data.windowTokens = 0;
    if (frame.event === 'tool.result' && typeof data.error === 'object' && data.error !== null) {
      data.error = (data.error as { message: string }).message;
    }
    return { ...frame, data };
  });
};

/** Reads an SSE response until `stop` accepts a frame (or the stream ends). */
const readSse = async (response: Response, onFrame: (frame: Frame) => Promise<boolean>): Promise<void> => {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(
        block
          .split('\n')
          .filter((line) => !line.startsWith(':') && line.includes(':'))
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
      ) as Record<string, string>;
      if (fields.event === undefined) continue;
      const frame = {
        id: fields.id ?? '',
        event: fields.event,
        data: JSON.parse(fields.data ?? '{}') as Record<string, unknown>,
      };
      if (await onFrame(frame)) {
        await reader.cancel();
        return;
      }
    }
  }
};

const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.cancelled']);

describe('the gateway gRPC API (gateway, agent, tools as processes)', () => {
  const env = platformEnv('gwgrpc', { KEEL_SSE_HEARTBEAT_MS: '500' });
  let fake: FakeOpenAI;
  let webhook: Awaited<ReturnType<typeof startWebhookServer>>;
  let processes: ProcessHandle[] = [];
  let base = '';
  let grpc: ReturnType<typeof conversationsClient>;
  let pricingViaGateway: ReturnType<typeof pricingClient>;
  let pricingDirect: ReturnType<typeof pricingClient>;
  const keys = { admin: '', editor: '', viewer: '', otherEditor: '' };

  const http = async (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async (response: Response) => (await response.json()) as Record<string, unknown>;

  /** The scripted turn: a refund that needs approval, then a streamed answer. */
  const scriptTurn = () =>
    fake.script(
      fakeReply.toolCall('refund', { id: 'o-1' }, { id: 'call_refund_1' }),
      fakeReply.text('Refunded order o-1, anything else?', { chunkSize: 5 }),
    );

  const createConversation = async (): Promise<string> => {
    const created = await grpc.unary<{ conversation: { id: string; status: string } }>(
      'createConversation',
      keys.editor,
      {
        agentId: 'support',
        title: 'refunds',
      },
    );
    expect(created.conversation.status).toBe('CONVERSATION_STATUS_IDLE');
    return created.conversation.id;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    webhook = await startWebhookServer();
    const agentPort = await freePort();
    const port = await freePort();
    const grpcPort = await freePort();
    const pricingPort = await freePort();
    base = `http://127.0.0.1:${port}`;
    processes = await Promise.all([
      startAgent(env, agentPort, fake.url),
      startTools(env),
      startProcess({
        name: 'pricing',
        entry: 'services/pricing/src/main.ts',
        env: { ...env, GRPC_PORT: String(pricingPort) },
        readyLine: /"msg":"ready"/,
      }),
      startGateway(env, { port, grpcPort, agentPort }, OPERATOR_KEY, {
        extra: { PRICING_GRPC_URL: `127.0.0.1:${pricingPort}` },
      }),
    ]);
    grpc = conversationsClient(`127.0.0.1:${grpcPort}`);
    pricingViaGateway = pricingClient(`127.0.0.1:${grpcPort}`);
    pricingDirect = pricingClient(`127.0.0.1:${pricingPort}`);
    const issue = async (tenantId: unknown, role: string) =>
      (await json(await http('POST', `/v1/tenants/${String(tenantId)}/keys`, OPERATOR_KEY, { role })))
        .key as string;
    const tenant = await json(await http('POST', '/v1/tenants', OPERATOR_KEY, { name: 'Acme' }));
    keys.admin = await issue(tenant.id, 'admin');
    keys.editor = await issue(tenant.id, 'editor');
    keys.viewer = await issue(tenant.id, 'viewer');
    const other = await json(await http('POST', '/v1/tenants', OPERATOR_KEY, { name: 'Globex' }));
    keys.otherEditor = await issue(other.id, 'editor');
    webhook.setSecret((await json(await http('POST', '/v1/webhook-secret', keys.admin))).secret as string);
    const tool = await http('PUT', '/v1/tools/refund', keys.admin, {
      description: 'Refund an order',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      kind: 'webhook',
      url: webhook.url,
      approval: 'always',
      timeoutMs: 10_000,
    });
    expect(tool.status).toBe(200);
    const agent = await http('PUT', '/v1/agents/support', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['refund'],
      maxSteps: 4,
    });
    expect(agent.status).toBe(200);
    expect((await http('PUT', '/v1/providers/openai', keys.admin, { baseUrl: fake.url })).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    grpc?.close();
    pricingViaGateway?.close();
    pricingDirect?.close();
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake?.close();
    await webhook?.close();
  });

  it('streams the same turn over gRPC SendMessage as over the HTTP turn stream: names, data and ids, approval included', async () => {
    // Over HTTP: stream, approve from another connection when asked, read on to the end.
    scriptTurn();
    const sseConversation = await createConversation();
    const sseFrames: Frame[] = [];
    const response = await http(
      'POST',
      `/v1/conversations/${sseConversation}/messages`,
      keys.editor,
      { content: 'Please refund order o-1' },
      { accept: 'text/event-stream' },
    );
    expect(response.status).toBe(200);
    await readSse(response, async (frame) => {
      sseFrames.push(frame);
      if (frame.event === 'approval.required') {
        const decided = await http(
          'POST',
          `/v1/conversations/${sseConversation}/approvals/${String(frame.data.approvalId)}`,
          keys.editor,
          { decision: 'approve' },
        );
        expect(decided.status).toBe(200);
      }
      return TERMINAL.has(frame.event);
    });

    // Over gRPC: the same script, approved with DecideApproval.
    scriptTurn();
    const grpcConversation = await createConversation();
    const grpcFrames: Frame[] = [];
    const call = grpc.stream(keys.editor, {
      conversationId: grpcConversation,
      content: 'Please refund order o-1',
    });
    await new Promise<void>((resolve, reject) => {
      call.on('data', (event: Record<string, unknown>) => {
        const frame = frameOfTurnEvent(event);
        grpcFrames.push(frame);
        if (frame.event === 'approval.required') {
          grpc
            .unary('decideApproval', keys.editor, {
              conversationId: grpcConversation,
              approvalId: frame.data.approvalId,
              decision: 'DECISION_APPROVE',
            })
            .catch(reject);
        }
      });
      call.on('error', reject);
      call.on('end', () => resolve());
    });

    const names = sseFrames.map((f) => f.event);
    // Each model call ends with message.completed and usage; the first one asked for the tool.
    expect(names.filter((n) => n !== 'message.delta' && n !== 'context')).toEqual([
      'turn.started',
      'message.completed',
      'usage',
      'tool.call',
      'approval.required',
      'approval.decided',
      'tool.result',
      'message.completed',
      'usage',
      'turn.completed',
    ]);
    expect(names).toContain('message.delta');
    expect(normalise(grpcFrames)).toEqual(normalise(sseFrames));
    expect(grpcFrames.every((f) => /^\d+(\.\d+)?$/.test(f.id))).toBe(true);
  });

  it('CreateConversation, GetConversation and ListConversations answer what HTTP answers', async () => {
    const id = await createConversation();
    const got = await grpc.unary<{
      conversation: { id: string; agentId: string; title: string; version: number };
    }>('getConversation', keys.viewer, { conversationId: id });
    expect(got.conversation).toMatchObject({ id, agentId: 'support' });
    const overHttp = await json(await http('GET', `/v1/conversations/${id}`, keys.viewer));
    expect(got.conversation.version).toBe(overHttp.version);
    const listed = await grpc.unary<{ data: Array<{ id: string }> }>('listConversations', keys.viewer, {
      limit: 2,
    });
    expect(listed.data[0]?.id).toBe(id);
  });

  it('idempotency_key: a retried CreateConversation or SendMessage does the work once', async () => {
    const create = () =>
      grpc.unary<{ conversation: { id: string } }>('createConversation', keys.editor, {
        agentId: 'support',
        idempotencyKey: 'create-once-1',
      });
    const first = await create();
    expect((await create()).conversation.id).toBe(first.conversation.id);
    expect(
      await codeOf(
        grpc.unary('createConversation', keys.editor, { agentId: 'other', idempotencyKey: 'create-once-1' }),
      ),
    ).toBe(status.ABORTED);

    fake.script(fakeReply.text('Once only.'));
    const id = first.conversation.id;
    const send = () =>
      new Promise<Frame[]>((resolve, reject) => {
        const frames: Frame[] = [];
        const call = grpc.stream(keys.editor, {
          conversationId: id,
          content: 'Say it once',
          idempotencyKey: 'send-once-1',
        });
        call.on('data', (event: Record<string, unknown>) => frames.push(frameOfTurnEvent(event)));
        call.on('error', reject);
        call.on('end', () => resolve(frames));
      });
    const streamed = await send();
    const retried = await send();
    expect(streamed.at(-1)?.event).toBe('turn.completed');
    // The retry streams the same turn again from the log: its durable frames, no second turn.
    const durable = (frames: Frame[]) => frames.filter((f) => !f.id.includes('.'));
    expect(durable(retried)).toEqual(durable(streamed));
    const state = await json(await http('GET', `/v1/conversations/${id}`, keys.viewer));
    expect((state.messages as Array<{ role: string }>).filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('a caller that goes away mid-stream does not stop the turn', async () => {
    fake.script(
      fakeReply.text('One two three four five six seven eight nine ten.', { chunkSize: 2, chunkDelayMs: 40 }),
    );
    const id = await createConversation();
    const call = grpc.stream(keys.editor, { conversationId: id, content: 'Count to ten slowly' });
    await new Promise<void>((resolve) => {
      call.on('data', (event: Record<string, unknown>) => {
        if (event.event === 'message.delta') resolve();
      });
    });
    call.on('error', () => undefined);
    call.cancel();
    const state = await eventually(
      async () => {
        const body = await json(await http('GET', `/v1/conversations/${id}`, keys.viewer));
        expect(body.status).toBe('idle');
        return body as { messages: Array<{ role: string; content: string }> };
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(state.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: 'One two three four five six seven eight nine ten.',
    });
  });

  it('refuses with typed statuses: no or unknown key, role, another tenant, bad input, conflicts; echoes x-request-id', async () => {
    const id = await createConversation();
    expect(await codeOf(grpc.unary('getConversation', undefined, { conversationId: id }))).toBe(
      status.UNAUTHENTICATED,
    );
    expect(await codeOf(grpc.unary('getConversation', 'keel_not_a_key', { conversationId: id }))).toBe(
      status.UNAUTHENTICATED,
    );
    expect(await codeOf(grpc.unary('createConversation', keys.viewer, { agentId: 'support' }))).toBe(
      status.PERMISSION_DENIED,
    );
    expect(await codeOf(grpc.unary('createConversation', OPERATOR_KEY, { agentId: 'support' }))).toBe(
      status.PERMISSION_DENIED,
    );
    expect(await codeOf(grpc.unary('getConversation', keys.otherEditor, { conversationId: id }))).toBe(
      status.NOT_FOUND,
    );
    expect(await codeOf(grpc.unary('createConversation', keys.editor, { agentId: 'nobody' }))).toBe(
      status.NOT_FOUND,
    );
    expect(await codeOf(grpc.unary('createConversation', keys.editor, { agentId: '' }))).toBe(
      status.INVALID_ARGUMENT,
    );
    expect(await codeOf(grpc.unary('cancelTurn', keys.editor, { conversationId: id }))).toBe(status.ABORTED);
    expect(
      await codeOf(
        grpc.unary('decideApproval', keys.editor, {
          conversationId: id,
          approvalId: 'ap_unknown',
          decision: 'DECISION_APPROVE',
        }),
      ),
    ).toBe(status.NOT_FOUND);

    const streamStatus = (key: string, request: object) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        const call = grpc.stream(key, request);
        call.on('data', () => undefined);
        call.on('error', (error: ServiceError) => resolve({ code: error.code, details: error.details }));
        call.on('end', () => resolve({ code: status.OK, details: '' }));
      });
    expect((await streamStatus(keys.viewer, { conversationId: id, content: 'hi' })).code).toBe(
      status.PERMISSION_DENIED,
    );
    expect((await streamStatus(keys.otherEditor, { conversationId: id, content: 'hi' })).code).toBe(
      status.NOT_FOUND,
    );
    const empty = await streamStatus(keys.editor, { conversationId: id, content: '' });
    expect(empty.code).toBe(status.INVALID_ARGUMENT);
    expect(empty.details).toMatch(/^content/);
    // Nothing was written by the refused calls.
    const state = await json(await http('GET', `/v1/conversations/${id}`, keys.viewer));
    expect(state).toMatchObject({ status: 'idle', messages: [] });

    const headers = await grpc.headersOf(
      'getConversation',
      keys.viewer,
      { conversationId: id },
      {
        'x-request-id': 'req-grpc-42',
      },
    );
    expect(headers.get('x-request-id')).toEqual(['req-grpc-42']);
  });

  it('passes PricingService through to the pricing service: reads for any key, SetPrice for the operator only', async () => {
    const direct = await pricingDirect.unary<{ models: Array<{ model: string }> }>(
      'listModels',
      undefined,
      {},
    );
    const viaGateway = await pricingViaGateway.unary('listModels', keys.viewer, {});
    expect(direct.models.length).toBeGreaterThan(0);
    expect(viaGateway).toEqual(direct);
    expect(await codeOf(pricingViaGateway.unary('listModels', undefined, {}))).toBe(status.UNAUTHENTICATED);
    expect(await codeOf(pricingViaGateway.unary('getPrice', keys.viewer, { model: 'nobody:no-model' }))).toBe(
      status.NOT_FOUND,
    );

    const price = {
      model: 'openai:gpt-4o-mini',
      inputUsdPerMtok: 1.25,
      outputUsdPerMtok: 2.5,
      reason: 'e2e',
    };
    expect(await codeOf(pricingViaGateway.unary('setPrice', keys.admin, price))).toBe(
      status.PERMISSION_DENIED,
    );
    await pricingViaGateway.unary('setPrice', OPERATOR_KEY, price);
    const now = await pricingViaGateway.unary<{
      price: { inputUsdPerMtok: number; outputUsdPerMtok: number };
    }>('getPrice', keys.viewer, { model: 'openai:gpt-4o-mini' });
    expect(now.price).toMatchObject({ inputUsdPerMtok: 1.25, outputUsdPerMtok: 2.5 });
  });
});
