// The gateway's public gRPC API (keel.conversations.v1.ConversationService) with the gateway, the
// agent and the tools service as separate processes on real NATS and MongoDB, the model played by
// the fake OpenAI server and the tool by the e2e webhook server: the same scripted turn streamed
// over HTTP SSE and over gRPC SendMessage gives the same events (names, data, ids), approval
// included; a caller that goes away does not stop its turn; keys, roles and tenants are refused
// with the typed statuses API.md and the proto promise.
import { status } from '@grpc/grpc-js';
import type { FakeOpenAI } from '@keel/testkit';
import { eventually, fakeReply } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { APPROVED_TOOL_TURN, startGatewayPlatform } from './support/gateway-platform.js';
import type {
  DeepPartial,
  SendMessageRequest,
  TurnEvent,
} from '@keel/proto/keel/conversations/v1/conversations';
import { ConversationStatus, Decision } from '@keel/proto/keel/conversations/v1/conversations';
import { codeOf, conversationsClient, pricingClient, sendStatus } from './support/grpc-client.js';
import { jsonOf, openTurnStream } from './support/http.js';

/** One frame as a client sees it: id, event name, data (from SSE, or rebuilt from a TurnEvent). */
interface Frame {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** A TurnEvent as the SSE frame it stands for: payload fields back to API.md's JSON. */
const frameOfTurnEvent = (event: TurnEvent): Frame => {
  // The payload oneof is one optional field per member: the one that is set.
  const { id, event: name, ...members } = event;
  const payload = (Object.values(members).find((member) => member !== undefined) ?? {}) as Record<
    string,
    unknown
  >;
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(payload)) {
    if (value === undefined) continue; // an unset proto3 `optional`: not data
    if (key === 'argsJson') data.args = JSON.parse(value as string);
    else if (key === 'resultJson') data.result = JSON.parse(value as string);
    else if (key === 'decision') data.decision = Decision[value as Decision].toLowerCase();
    else data[key] = value;
  }
  return { id, event: name, data };
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

const TERMINAL = new Set(['turn.completed', 'turn.failed', 'turn.cancelled']);

describe('the gateway gRPC API (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let fake: FakeOpenAI;
  let OPERATOR_KEY = '';
  let grpc: ReturnType<typeof conversationsClient>;
  let pricingViaGateway: ReturnType<typeof pricingClient>;
  let pricingDirect: ReturnType<typeof pricingClient>;
  const keys = { admin: '', editor: '', viewer: '', otherEditor: '' };

  /** The scripted turn: a refund that needs approval, then a streamed answer. */
  const scriptTurn = () =>
    fake.script(
      fakeReply.toolCall('refund', { id: 'o-1' }, { id: 'call_refund_1' }),
      fakeReply.text('Refunded order o-1, anything else?', { chunkSize: 5 }),
    );

  const createConversation = async (): Promise<string> => {
    const created = await grpc.unary('createConversation', keys.editor, {
      agentId: 'support',
      title: 'refunds',
    });
    expect(created.conversation?.status).toBe(ConversationStatus.IDLE);
    return created.conversation?.id ?? '';
  };

  beforeAll(async () => {
    platform = await startGatewayPlatform('gwgrpc', {
      env: { KEEL_SSE_HEARTBEAT_MS: '500' },
      pricingFor: ['gateway'],
    });
    ({ fake, operatorKey: OPERATOR_KEY } = platform);
    grpc = conversationsClient(platform.grpcAddress);
    pricingViaGateway = pricingClient(platform.grpcAddress);
    pricingDirect = pricingClient(platform.pricingAddress!);
    const acme = await platform.tenantWithKeys('Acme', ['admin', 'editor', 'viewer'] as const);
    Object.assign(keys, acme.keys);
    keys.otherEditor = (await platform.tenantWithKeys('Globex', ['editor'] as const)).keys.editor;
    await platform.configureSupportAgent(keys.admin);
    // An intent the refund message matches: turn.started carries it on both transports.
    const intents = [{ name: 'refunds', keywords: ['refund'], tools: ['refund'] }];
    const agent = await platform.request('PUT', '/v1/agents/support', keys.admin, {
      model: 'openai:gpt-4o-mini',
      tools: ['refund'],
      maxSteps: 4,
      intents,
    });
    expect(agent.status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    grpc?.close();
    pricingViaGateway?.close();
    pricingDirect?.close();
    await platform?.stop();
  });

  it('streams the same turn over gRPC SendMessage as over the HTTP turn stream: names, data and ids, approval included', async () => {
    // Over HTTP: stream, approve from another connection when asked, read on to the end.
    scriptTurn();
    const sseConversation = await createConversation();
    const stream = await openTurnStream(platform.base, keys.editor, sseConversation, {
      content: 'Please refund order o-1',
    });
    expect(stream.response.status).toBe(200);
    const asked = (await stream.until((frame) => frame.event === 'approval.required')).at(-1)!;
    const decided = await platform.request(
      'POST',
      `/v1/conversations/${sseConversation}/approvals/${String((asked.data as { approvalId: string }).approvalId)}`,
      keys.editor,
      { decision: 'approve' },
    );
    expect(decided.status).toBe(200);
    const sseFrames = (await stream.until((frame) => TERMINAL.has(frame.event!))) as Frame[];
    stream.close();

    // Over gRPC: the same script, approved with DecideApproval.
    scriptTurn();
    const grpcConversation = await createConversation();
    const grpcFrames: Frame[] = [];
    const call = grpc.stream(keys.editor, {
      conversationId: grpcConversation,
      content: 'Please refund order o-1',
    });
    await new Promise<void>((resolve, reject) => {
      call.on('data', (event: TurnEvent) => {
        const frame = frameOfTurnEvent(event);
        grpcFrames.push(frame);
        if (frame.event === 'approval.required') {
          grpc
            .unary('decideApproval', keys.editor, {
              conversationId: grpcConversation,
              approvalId: String(frame.data.approvalId),
              decision: Decision.APPROVE,
            })
            .catch(reject);
        }
      });
      call.on('error', reject);
      call.on('end', () => resolve());
    });

    const names = sseFrames.map((f) => f.event);
    // Each model call ends with message.completed and usage; the first one asked for the tool.
    expect(names.filter((n) => n !== 'message.delta' && n !== 'context')).toEqual(APPROVED_TOOL_TURN);
    expect(names).toContain('message.delta');
    expect(normalise(grpcFrames)).toEqual(normalise(sseFrames));
    expect(grpcFrames.find((f) => f.event === 'turn.started')!.data).toMatchObject({
      intent: 'refunds',
      confidence: 1,
    });
    expect(grpcFrames.every((f) => /^\d+(\.\d+)?$/.test(f.id))).toBe(true);
  });

  it('CreateConversation, GetConversation and ListConversations answer what HTTP answers', async () => {
    const id = await createConversation();
    const got = await grpc.unary('getConversation', keys.viewer, { conversationId: id });
    expect(got.conversation).toMatchObject({ id, agentId: 'support' });
    const overHttp = await jsonOf(await platform.request('GET', `/v1/conversations/${id}`, keys.viewer));
    expect(got.conversation?.version).toBe(overHttp.version);
    const listed = await grpc.unary('listConversations', keys.viewer, {
      limit: 2,
    });
    expect(listed.data[0]?.id).toBe(id);
  });

  it('idempotency_key: a retried CreateConversation or SendMessage does the work once', async () => {
    const create = () =>
      grpc.unary('createConversation', keys.editor, {
        agentId: 'support',
        idempotencyKey: 'create-once-1',
      });
    const first = await create();
    expect((await create()).conversation?.id).toBe(first.conversation?.id);
    expect(
      await codeOf(
        grpc.unary('createConversation', keys.editor, { agentId: 'other', idempotencyKey: 'create-once-1' }),
      ),
    ).toBe(status.ABORTED);

    fake.script(fakeReply.text('Once only.'));
    const id = first.conversation?.id ?? '';
    const send = () =>
      new Promise<Frame[]>((resolve, reject) => {
        const frames: Frame[] = [];
        const call = grpc.stream(keys.editor, {
          conversationId: id,
          content: 'Say it once',
          idempotencyKey: 'send-once-1',
        });
        call.on('data', (event: TurnEvent) => frames.push(frameOfTurnEvent(event)));
        call.on('error', reject);
        call.on('end', () => resolve(frames));
      });
    const streamed = await send();
    const retried = await send();
    expect(streamed.at(-1)?.event).toBe('turn.completed');
    // The retry streams the same turn again from the log: its durable frames, no second turn.
    const durable = (frames: Frame[]) => frames.filter((f) => !f.id.includes('.'));
    expect(durable(retried)).toEqual(durable(streamed));
    const state = await jsonOf(await platform.request('GET', `/v1/conversations/${id}`, keys.viewer));
    expect((state.messages as Array<{ role: string }>).filter((m) => m.role === 'user')).toHaveLength(1);
  });

  it('a caller that goes away mid-stream does not stop the turn', async () => {
    fake.script(
      fakeReply.text('One two three four five six seven eight nine ten.', { chunkSize: 2, chunkDelayMs: 40 }),
    );
    const id = await createConversation();
    const call = grpc.stream(keys.editor, { conversationId: id, content: 'Count to ten slowly' });
    await new Promise<void>((resolve) => {
      call.on('data', (event: TurnEvent) => {
        if (event.event === 'message.delta') resolve();
      });
    });
    call.on('error', () => undefined);
    call.cancel();
    const state = await eventually(
      async () => {
        const body = await jsonOf(await platform.request('GET', `/v1/conversations/${id}`, keys.viewer));
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
          decision: Decision.APPROVE,
        }),
      ),
    ).toBe(status.NOT_FOUND);

    const streamStatus = (key: string, request: DeepPartial<SendMessageRequest>) =>
      sendStatus(grpc, key, request);
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
    const state = await jsonOf(await platform.request('GET', `/v1/conversations/${id}`, keys.viewer));
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
    const direct = await pricingDirect.unary('listModels', undefined, {});
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
    const now = await pricingViaGateway.unary('getPrice', keys.viewer, { model: 'openai:gpt-4o-mini' });
    expect(now.price).toMatchObject({ inputUsdPerMtok: 1.25, outputUsdPerMtok: 2.5 });
  });
});
