// Exactly once at the edge: a request whose agent died between committing it and replying is
// answered 503 although its work is done; the client's retry with the same Idempotency-Key, through
// another gateway that reaches another agent, gets the ORIGINAL outcome and does nothing twice.
// Real processes on NATS and FerretDB: agent A (which SIGKILLs itself right after the commit of the
// RPC named in KEEL_TEST_CRASH_AFTER_COMMIT, restarted for each case), agent B, the tools and audit
// services, gateway 1 (→ agent A) and gateway 2 (→ agent B), one store and bus; the model is the
// fake OpenAI server, the tool a webhook server that counts its calls per Idempotency-Key.
import type { FakeOpenAI, ProcessHandle, SseFrame } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  openSse,
  startFakeOpenAI,
  uniqueName,
} from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationsClient, failureOf } from './support/grpc-client.js';
import type { Answer } from './support/http.js';
import { answerOf, gatewayRequest, openTurnStream } from './support/http.js';
import { platformEnv, startAgent, startAudit, startGateway, startTools } from './support/platform.js';
import type { WebhookServer } from './support/webhook-server.js';
import { startWebhookServer } from './support/webhook-server.js';

interface ConversationBody {
  status: string;
  messages: Array<{ role: string; content: string }>;
  pendingApprovals: Array<{ approvalId: string }>;
}

const day = (offsetDays: number): string =>
  new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

describe('exactly once at the edge (an agent killed between commit and reply)', () => {
  // Webhooks and the fake model listen on loopback: opened on purpose, as the egress policy says.
  const env = platformEnv('exactly_once', { KEEL_EGRESS_ALLOW: '127.0.0.0/8,::1/128' });
  const operatorKey = `op_${uniqueName('exactly_once')}`;
  const ports = { agentB: 0, audit: 0 };
  /** Gateway 1 (→ agent A, started afresh for each case) and gateway 2 (→ agent B). */
  const gateways: Array<{ base: string; grpc: string }> = [];
  const processes: ProcessHandle[] = [];
  let agentA: ProcessHandle | undefined;
  let gatewayOne: ProcessHandle | undefined;
  let fake: FakeOpenAI;
  let webhook: WebhookServer;
  const keys = { admin: '', editor: '', viewer: '' };

  /** An HTTP call on gateway `g` (0: the one whose agent dies; 1: the other). */
  const call = async (
    g: 0 | 1,
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> => answerOf(await gatewayRequest(gateways[g]!.base, method, path, key, body, headers));

  /**
   * Starts agent A, which dies right after committing `rpc` (or, with the HOLD fault, holds its
   * reply for 20 s), and gateway 1 in front of it (both on fresh ports: a dead agent's port may be
   * taken by the time the next case runs), and waits until gateway 1 reaches it.
   */
  const crashingAgentA = async (
    rpc: string,
    probeConversationId: string,
    fault: 'KEEL_TEST_CRASH_AFTER_COMMIT' | 'KEEL_TEST_HOLD_AFTER_COMMIT' = 'KEEL_TEST_CRASH_AFTER_COMMIT',
  ) => {
    for (const left of [agentA, gatewayOne]) if (left && !left.exit) await left.kill('SIGKILL');
    // Other test files walk the same free ports: one taken meanwhile is tried again with others.
    for (let attempt = 1; ; attempt++) {
      const [agentPort, port, grpcPort] = [await freePort(), await freePort(), await freePort()];
      try {
        agentA = await startAgent({ ...env, [fault]: rpc }, agentPort, fake.url, 'agent-a');
        processes.push(agentA);
        gatewayOne = await startGateway(env, { port, grpcPort, agentPort }, operatorKey, {
          name: 'gateway-1',
          extra: { AUDIT_GRPC_URL: `127.0.0.1:${ports.audit}` },
        });
        processes.push(gatewayOne);
        gateways[0] = { base: `http://127.0.0.1:${port}`, grpc: `127.0.0.1:${grpcPort}` };
        break;
      } catch (error) {
        for (const left of [agentA, gatewayOne]) if (left && !left.exit) await left.kill('SIGKILL');
        if (attempt >= 3 || !String(error).includes('EADDRINUSE')) throw error;
      }
    }
    await eventually(
      async () =>
        expect((await call(0, 'GET', `/v1/conversations/${probeConversationId}`, keys.viewer)).status).toBe(
          200,
        ),
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  };

  /** Agent A died by its own SIGKILL (after its commit, before its reply). */
  const agentAKilledItself = async () => {
    const exit = await agentA!.waitForExit(15_000);
    expect(exit.signal).toBe('SIGKILL');
  };

  const createConversation = async (agentId: string): Promise<string> => {
    const created = await call(1, 'POST', '/v1/conversations', keys.editor, { agentId });
    expect(created.status, created.text).toBe(201);
    return (created.body as { id: string }).id;
  };

  const conversation = async (id: string): Promise<ConversationBody> => {
    const got = await call(1, 'GET', `/v1/conversations/${id}`, keys.viewer);
    expect(got.status, got.text).toBe(200);
    return got.body as ConversationBody;
  };

  const settled = (id: string, status = 'idle') =>
    eventually(async () => expect((await conversation(id)).status).toBe(status), {
      timeoutMs: 45_000,
      intervalMs: 200,
    });

  /** The durable frames of the conversation's log, from the start, read until `last` is seen. */
  const logFrames = async (id: string, last: (frame: SseFrame) => boolean): Promise<SseFrame[]> => {
    const feed = await openSse(`${gateways[1]!.base}/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream' },
    });
    try {
      await feed.until(last, 30_000);
      // Anything a duplicate would have added comes with or right after the frames so far.
      await new Promise((resolve) => setTimeout(resolve, 500));
      return feed.events();
    } finally {
      feed.close();
    }
  };
  const named = (frames: SseFrame[], event: string) => frames.filter((f) => f.event === event);

  const webhookCalls = (conversationId: string) =>
    webhook.hits.filter((hit) => hit.body.conversationId === conversationId);

  /** The turns the usage rollups count for the acting user `userId` (audit service, from the events). */
  const turnsCounted = async (userId: string): Promise<number | undefined> => {
    const usage = await call(1, 'GET', `/v1/usage?from=${day(-1)}&to=${day(1)}&groupBy=user`, keys.viewer);
    expect(usage.status, usage.text).toBe(200);
    return (usage.body as { rows: Array<{ key: string; turns: number }> }).rows.find((r) => r.key === userId)
      ?.turns;
  };

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    webhook = await startWebhookServer();
    ports.agentB = await freePort();
    ports.audit = await freePort();
    const [port, grpcPort] = [await freePort(), await freePort()];
    gateways[1] = { base: `http://127.0.0.1:${port}`, grpc: `127.0.0.1:${grpcPort}` };
    processes.push(
      await startGateway(env, { port, grpcPort, agentPort: ports.agentB }, operatorKey, {
        name: 'gateway-2',
        extra: { AUDIT_GRPC_URL: `127.0.0.1:${ports.audit}` },
      }),
    );
    processes.push(
      ...(await Promise.all([
        startAgent(env, ports.agentB, fake.url, 'agent-b'),
        startTools(env),
        startAudit(env, ports.audit),
      ])),
    );

    const tenant = await call(1, 'POST', '/v1/tenants', operatorKey, { name: 'Exactly once' });
    expect(tenant.status, tenant.text).toBe(201);
    const tenantId = (tenant.body as { id: string }).id;
    for (const role of ['admin', 'editor', 'viewer'] as const) {
      const issued = await call(1, 'POST', `/v1/tenants/${tenantId}/keys`, operatorKey, { role });
      keys[role] = (issued.body as { key: string }).key;
    }
    webhook.setSecret(
      ((await call(1, 'POST', '/v1/webhook-secret', keys.admin)).body as { secret: string }).secret,
    );
    for (const [name, approval] of [
      ['lookup', 'never'],
      ['refund', 'always'],
    ] as const) {
      const tool = await call(1, 'PUT', `/v1/tools/${name}`, keys.admin, {
        description: `${name} an order`,
        inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        kind: 'webhook',
        url: webhook.url,
        approval,
        timeoutMs: 10_000,
      });
      expect(tool.status, tool.text).toBe(200);
    }
    // One agent per case, so the usage rows count each case's turns apart. The model is the
    // platform's (OPENAI_BASE_URL: the fake server), so the tenant configures no provider.
    for (const [agentId, tool] of [
      ['send-once', 'lookup'],
      ['stream-once', 'lookup'],
      ['approve-once', 'refund'],
      ['cancel-once', 'refund'],
      ['create-once', 'lookup'],
      ['held-once', 'lookup'],
    ] as const) {
      const agent = await call(1, 'PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: 'openai:gpt-4o-mini',
        tools: [tool],
        maxSteps: 4,
      });
      expect(agent.status, agent.text).toBe(200);
    }
  }, 240_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake?.close();
    await webhook?.close();
  });

  it('a message committed by an agent that died before replying: the retry gets the original turn, run once', async () => {
    const id = await createConversation('send-once');
    fake.on(
      lastUserMessageIncludes('[send-once]'),
      fakeReply.toolCall('lookup', { id: 'o-1' }),
      fakeReply.text('Order o-1 has shipped.'),
    );
    await crashingAgentA('SubmitMessage', id);
    const key = `send-${uniqueName('k')}`;
    const message = { content: '[send-once] where is my order o-1?' };
    const path = `/v1/conversations/${id}/messages`;

    const first = await call(0, 'POST', path, keys.editor, message, {
      'idempotency-key': key,
      'x-keel-user': 'send-once',
    });
    expect(first.status, first.text).toBe(503);
    expect(first.body).toMatchObject({ code: 'unavailable' });
    await agentAKilledItself();
    // Its agent is gone: gateway 1 answers 503 again, and does not burn the key on it.
    expect(
      (
        await call(0, 'POST', path, keys.editor, message, {
          'idempotency-key': key,
          'x-keel-user': 'send-once',
        })
      ).status,
    ).toBe(503);

    const retry = await call(1, 'POST', path, keys.editor, message, {
      'idempotency-key': key,
      'x-keel-user': 'send-once',
    });
    expect(retry.status, retry.text).toBe(202);
    const { turnId } = retry.body as { turnId: string };
    await settled(id);

    // The log has one turn, the one the retry named, and the message once.
    const frames = await logFrames(id, (f) => f.event === 'turn.completed');
    expect(named(frames, 'turn.started').map((f) => (f.data as { turnId: string }).turnId)).toEqual([turnId]);
    expect(named(frames, 'turn.completed')).toHaveLength(1);
    const view = await conversation(id);
    expect(view.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([message.content]);
    expect(view.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'Order o-1 has shipped.' });
    // The webhook was called once for the one user request; usage counts one turn.
    expect(webhookCalls(id)).toHaveLength(1);
    expect(webhook.effects.get(webhookCalls(id)[0]!.key)).toBe(1);
    await eventually(async () => expect(await turnsCounted('send-once')).toBe(1), {
      timeoutMs: 30_000,
      intervalMs: 300,
    });

    // Any later retry, through either gateway, names the same turn; another body with the key: 409.
    const later = await call(1, 'POST', path, keys.editor, message, {
      'idempotency-key': key,
      'x-keel-user': 'send-once',
    });
    expect(later.body).toEqual({ turnId });
    const other = await call(
      1,
      'POST',
      path,
      keys.editor,
      { content: 'something else' },
      { 'idempotency-key': key, 'x-keel-user': 'send-once' },
    );
    expect(other.status).toBe(409);
    expect(webhookCalls(id)).toHaveLength(1);
    expect(await turnsCounted('send-once')).toBe(1);
  });

  it('a gateway killed while the reply to a committed message was on its way: the retry through the other gateway gets the original turn', async () => {
    const id = await createConversation('held-once');
    fake.on(
      lastUserMessageIncludes('[held-once]'),
      fakeReply.toolCall('lookup', { id: 'o-4' }),
      fakeReply.text('Order o-4 is late.'),
    );
    await crashingAgentA('SubmitMessage', id, 'KEEL_TEST_HOLD_AFTER_COMMIT');
    const key = `held-${uniqueName('k')}`;
    const message = { content: '[held-once] and o-4?' };
    const path = `/v1/conversations/${id}/messages`;
    const headers = { 'idempotency-key': key, 'x-keel-user': 'held-once' };

    const first = gatewayRequest(gateways[0]!.base, 'POST', path, keys.editor, message, headers).then(
      (response) => response.status,
      () => 'connection lost',
    );
    // Agent A committed the message and holds its reply; gateway 1 holds the key's claim.
    await eventually(
      async () => expect((await conversation(id)).messages.filter((m) => m.role === 'user')).toHaveLength(1),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    await gatewayOne!.kill('SIGKILL');
    expect(await first).toBe('connection lost');

    // The claim gateway 1 left pending does not hold the retry: agent B answers from the log.
    const retry = await call(1, 'POST', path, keys.editor, message, headers);
    expect(retry.status, retry.text).toBe(202);
    const { turnId } = retry.body as { turnId: string };
    await settled(id);
    const frames = await logFrames(id, (f) => f.event === 'turn.completed');
    expect(named(frames, 'turn.started').map((f) => (f.data as { turnId: string }).turnId)).toEqual([turnId]);
    expect((await conversation(id)).messages.filter((m) => m.role === 'user')).toHaveLength(1);
    expect(webhookCalls(id)).toHaveLength(1);
    await eventually(async () => expect(await turnsCounted('held-once')).toBe(1), {
      timeoutMs: 30_000,
      intervalMs: 300,
    });
  });

  it('the streaming send: the retry streams the original turn, which ran once', async () => {
    const id = await createConversation('stream-once');
    fake.on(
      lastUserMessageIncludes('[stream-once]'),
      fakeReply.toolCall('lookup', { id: 'o-2' }),
      fakeReply.text('Order o-2 is on its way.'),
    );
    await crashingAgentA('SubmitMessage', id);
    const key = `stream-${uniqueName('k')}`;
    const message = { content: '[stream-once] and o-2?' };

    const first = await openTurnStream(gateways[0]!.base, keys.editor, id, message, {
      'idempotency-key': key,
      'x-keel-user': 'stream-once',
    });
    expect(first.response.status).toBe(503);
    await agentAKilledItself();

    const retry = await openTurnStream(gateways[1]!.base, keys.editor, id, message, {
      'idempotency-key': key,
      'x-keel-user': 'stream-once',
    });
    expect(retry.response.status).toBe(200);
    const streamed = await retry.until((f) => f.event === 'turn.completed', 45_000);
    retry.close();
    expect(streamed[0]).toMatchObject({ event: 'turn.started' });
    const turnId = (streamed[0]!.data as { turnId: string }).turnId;
    expect(named(streamed, 'tool.result')).toHaveLength(1);
    expect(named(streamed, 'message.completed').at(-1)?.data).toMatchObject({
      text: 'Order o-2 is on its way.',
    });

    await settled(id);
    const frames = await logFrames(id, (f) => f.event === 'turn.completed');
    expect(named(frames, 'turn.started').map((f) => (f.data as { turnId: string }).turnId)).toEqual([turnId]);
    const view = await conversation(id);
    expect(view.messages.filter((m) => m.role === 'user')).toHaveLength(1);
    expect(webhookCalls(id)).toHaveLength(1);
    await eventually(async () => expect(await turnsCounted('stream-once')).toBe(1), {
      timeoutMs: 30_000,
      intervalMs: 300,
    });
  });

  it('an approval decided by an agent that died before replying: the retry gets the first answer, not 409', async () => {
    const id = await createConversation('approve-once');
    fake.on(
      lastUserMessageIncludes('[approve-once]'),
      fakeReply.toolCall('refund', { id: 'r-1' }),
      fakeReply.text('Refunded r-1.'),
    );
    const sent = await call(1, 'POST', `/v1/conversations/${id}/messages`, keys.editor, {
      content: '[approve-once] refund r-1',
    });
    expect(sent.status).toBe(202);
    await settled(id, 'awaiting_approval');
    const { approvalId } = (await conversation(id)).pendingApprovals[0]!;
    await crashingAgentA('DecideApproval', id);
    const key = `approve-${uniqueName('k')}`;
    const path = `/v1/conversations/${id}/approvals/${approvalId}`;

    const first = await call(
      0,
      'POST',
      path,
      keys.editor,
      { decision: 'approve' },
      { 'idempotency-key': key },
    );
    expect(first.status, first.text).toBe(503);
    await agentAKilledItself();

    const retry = await call(
      1,
      'POST',
      path,
      keys.editor,
      { decision: 'approve' },
      { 'idempotency-key': key },
    );
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toEqual({ approvalId, decision: 'approve' });
    // The first request did decide it: a new decision (no key, or another key) is a conflict.
    expect((await call(1, 'POST', path, keys.editor, { decision: 'approve' })).status).toBe(409);
    // The same key with the other decision: a conflict naming the key, not a second decision.
    const flipped = await call(
      1,
      'POST',
      path,
      keys.editor,
      { decision: 'deny' },
      { 'idempotency-key': key },
    );
    expect(flipped.status).toBe(409);

    await settled(id);
    const frames = await logFrames(id, (f) => f.event === 'turn.completed');
    expect(named(frames, 'approval.decided')).toHaveLength(1);
    expect(named(frames, 'approval.decided')[0]!.data).toMatchObject({ approvalId, decision: 'approve' });
    expect(named(frames, 'tool.result')).toHaveLength(1);
    expect(webhookCalls(id)).toHaveLength(1);
    expect((await conversation(id)).messages.at(-1)).toMatchObject({ content: 'Refunded r-1.' });
  });

  it('a cancel committed by an agent that died before replying: the retry is 202 for the same turn, one cancellation', async () => {
    const id = await createConversation('cancel-once');
    fake.on(lastUserMessageIncludes('[cancel-once]'), fakeReply.toolCall('refund', { id: 'r-2' }));
    const sent = await call(1, 'POST', `/v1/conversations/${id}/messages`, keys.editor, {
      content: '[cancel-once] refund r-2',
    });
    expect(sent.status).toBe(202);
    const startedTurn = (sent.body as { turnId: string }).turnId;
    await settled(id, 'awaiting_approval');
    await crashingAgentA('CancelTurn', id);
    const key = `cancel-${uniqueName('k')}`;
    const path = `/v1/conversations/${id}/cancel`;

    const first = await call(0, 'POST', path, keys.editor, undefined, { 'idempotency-key': key });
    expect(first.status, first.text).toBe(503);
    await agentAKilledItself();

    const retry = await call(1, 'POST', path, keys.editor, undefined, { 'idempotency-key': key });
    expect(retry.status, retry.text).toBe(202);
    expect(retry.body).toEqual({ turnId: startedTurn });
    // The first request did cancel it: a new cancel finds no turn running.
    expect((await call(1, 'POST', path, keys.editor)).status).toBe(409);

    await settled(id);
    const frames = await logFrames(id, (f) => f.event === 'turn.cancelled');
    expect(named(frames, 'turn.cancelled').map((f) => f.data)).toEqual([{ turnId: startedTurn }]);
    expect((await conversation(id)).pendingApprovals).toEqual([]);
    expect(webhookCalls(id)).toHaveLength(0);
  });

  it('a create committed by an agent that died before replying: the retry answers the same conversation', async () => {
    const probe = await createConversation('create-once');
    await crashingAgentA('CreateConversation', probe);
    const key = `create-${uniqueName('k')}`;
    const title = `exactly once ${key}`;

    const first = await call(
      0,
      'POST',
      '/v1/conversations',
      keys.editor,
      { agentId: 'create-once', title },
      {
        'idempotency-key': key,
      },
    );
    expect(first.status, first.text).toBe(503);
    await agentAKilledItself();

    const retry = await call(
      1,
      'POST',
      '/v1/conversations',
      keys.editor,
      { agentId: 'create-once', title },
      {
        'idempotency-key': key,
      },
    );
    expect(retry.status, retry.text).toBe(201);
    expect(retry.body).toMatchObject({ agentId: 'create-once', status: 'idle' });
    const { id } = retry.body as { id: string };
    const listed = await call(1, 'GET', '/v1/conversations?limit=100', keys.viewer);
    const titled = (listed.body as { data: Array<{ id: string; title?: string }> }).data.filter(
      (c) => c.title === title,
    );
    expect(titled.map((c) => c.id)).toEqual([id]);
    const other = await call(
      1,
      'POST',
      '/v1/conversations',
      keys.editor,
      { agentId: 'create-once' },
      {
        'idempotency-key': key,
      },
    );
    expect(other.status).toBe(409);
  });

  it('gRPC: the idempotency-key metadata makes a retried cancel, through the other gateway, the first one', async () => {
    const id = await createConversation('cancel-once');
    fake.on(lastUserMessageIncludes('[grpc-cancel]'), fakeReply.toolCall('refund', { id: 'r-3' }));
    const sent = await call(1, 'POST', `/v1/conversations/${id}/messages`, keys.editor, {
      content: '[grpc-cancel] refund r-3',
    });
    const startedTurn = (sent.body as { turnId: string }).turnId;
    await settled(id, 'awaiting_approval');
    await crashingAgentA('CancelTurn', id);
    const key = `grpc-cancel-${uniqueName('k')}`;
    const [viaOne, viaTwo] = [conversationsClient(gateways[0]!.grpc), conversationsClient(gateways[1]!.grpc)];
    try {
      const failed = await failureOf(
        viaOne.unary('cancelTurn', keys.editor, { conversationId: id }, { 'idempotency-key': key }),
      );
      expect(failed?.code).toBe(14); // UNAVAILABLE
      await agentAKilledItself();
      const retried = await viaTwo.unary(
        'cancelTurn',
        keys.editor,
        { conversationId: id },
        { 'idempotency-key': key },
      );
      expect(retried).toMatchObject({ turnId: startedTurn });
    } finally {
      viaOne.close();
      viaTwo.close();
    }
    const frames = await logFrames(id, (f) => f.event === 'turn.cancelled');
    expect(named(frames, 'turn.cancelled')).toHaveLength(1);
  });
});
