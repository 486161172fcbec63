// Client tools end to end (API.md "The client in the loop"), with the gateway, agent and tools as
// processes on NATS and FerretDB and the fake OpenAI server as the model: the test is the
// connected client. It answers a client call (the model gets the result), is refused a bad, a
// second and a late answer, answers only after an approval, and lets a call time out while the
// agent is SIGKILLed: the restarted agent enforces the deadline, and the model sees the timeout
// once. The operator Overview counts a pending client call. Over gRPC too: the tool.call frame
// carries executor and deadline, SubmitToolResult answers.
import { status } from '@grpc/grpc-js';
import type { FakeChatRequest, SseFrame } from '@keel/testkit';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes, openSse } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { codeOf, conversationsClient } from './support/grpc-client.js';
import { answerOf, openTurnStream } from './support/http.js';
import { startAudit } from './support/platform.js';

const PAGE_SCHEMA = {
  type: 'object',
  properties: { title: { type: 'string' } },
  required: ['title'],
};

describe('client tools (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;
  let otherEditor: string;
  let audit: ProcessHandle | undefined;

  const put = (path: string, body: unknown) => platform.request('PUT', path, keys.admin, body).then(answerOf);
  const clientTool = (extra: Record<string, unknown>) => ({
    description: 'Runs in the browser',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    kind: 'client',
    ...extra,
  });
  const answer = (id: string, toolCallId: string, body: unknown, key = keys.editor) =>
    platform.request('POST', `/v1/conversations/${id}/tool-results/${toolCallId}`, key, body).then(answerOf);
  const conversation = async (id: string) =>
    (await answerOf(await platform.request('GET', `/v1/conversations/${id}`, keys.viewer))).body as {
      status: string;
      version: number;
      pendingClientCalls: Array<{ toolCallId: string; tool: string; args: unknown; deadline: string }>;
    };
  const newConversation = async () =>
    (
      (
        await answerOf(
          await platform.request('POST', '/v1/conversations', keys.editor, { agentId: 'page-bot' }),
        )
      ).body as { id: string }
    ).id;
  /** The durable frames of a conversation's log until `last`, and a moment after (a duplicate would show). */
  const logFrames = async (id: string, last: (frame: SseFrame) => boolean): Promise<SseFrame[]> => {
    const feed = await openSse(`${platform.base}/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${keys.viewer}`, accept: 'text/event-stream' },
    });
    try {
      await feed.until(last, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      return feed.events();
    } finally {
      feed.close();
    }
  };
  const clientCallsPending = async () =>
    (
      (await answerOf(await platform.request('GET', '/v1/operator/overview', platform.operatorKey))).body as {
        clientCallsPending: number;
      }
    ).clientCallsPending;
  /** The model requests of one turn (its marker in the last user message) and their tool messages. */
  const modelRequests = (marker: string): FakeChatRequest[] =>
    platform.fake.requests.flatMap((r) =>
      r.body && lastUserMessageIncludes(marker)(r.body) ? [r.body] : [],
    );
  const toolMessages = (request: FakeChatRequest) => request.messages.filter((m) => m.role === 'tool');

  beforeAll(async () => {
    // The audit service answers the operator Overview's usage figures (its clientCallsPending is checked).
    const auditPort = await freePort();
    platform = await startGatewayPlatform('client-tools', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
    });
    audit = await startAudit(platform.env, auditPort);
    ({ keys } = await platform.tenantWithKeys('client-tools-a', ['admin', 'editor', 'viewer']));
    ({
      keys: { editor: otherEditor },
    } = await platform.tenantWithKeys('client-tools-b', ['editor']));
    expect(
      (await put('/v1/tools/read_page', clientTool({ timeoutMs: 3_000, outputSchema: PAGE_SCHEMA }))).status,
    ).toBe(200);
    expect(
      (await put('/v1/tools/edit_page', clientTool({ timeoutMs: 3_000, approval: 'always' }))).status,
    ).toBe(200);
    expect((await put('/v1/tools/slow_read', clientTool({ timeoutMs: 1_500 }))).status).toBe(200);
    const agent = await put('/v1/agents/page-bot', {
      model: 'openai:gpt-4o-mini',
      tools: ['read_page', 'edit_page', 'slow_read'],
      maxSteps: 4,
    });
    expect(agent.status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('PUT: a client tool has no url, a timeoutMs of at most 600,000 (default 90,000) and a valid outputSchema', async () => {
    const stored = await put('/v1/tools/pick_color', clientTool({ outputSchema: PAGE_SCHEMA }));
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ kind: 'client', timeoutMs: 90_000, outputSchema: PAGE_SCHEMA });
    expect(stored.body).not.toHaveProperty('url');
    const refusals: Array<[Record<string, unknown>, RegExp]> = [
      [clientTool({ url: 'https://example.com/hook' }), /^url /],
      [clientTool({ timeoutMs: 600_001 }), /^timeoutMs /],
      [clientTool({ outputSchema: { type: 'no-such-type' } }), /^outputSchema /],
      [
        { ...clientTool({}), kind: 'webhook', url: 'https://example.com/h', outputSchema: PAGE_SCHEMA },
        /^outputSchema /,
      ],
    ];
    for (const [body, detail] of refusals) {
      const refused = await put('/v1/tools/bad_client', body);
      expect(refused.status).toBe(400);
      expect((refused.body as { detail: string }).detail).toMatch(detail);
    }
    const tools = (await answerOf(await platform.request('GET', '/v1/tools', keys.admin))).body as {
      data: Array<{ name: string }>;
    };
    expect(tools.data.map((t) => t.name)).not.toContain('bad_client');
  });

  it('the client answers a client call: a bad answer is 400 and writes nothing, the first good one wins, the model gets it', async () => {
    platform.fake.on(
      lastUserMessageIncludes('[ct-answer]'),
      fakeReply.toolCall('read_page', { id: 'home' }),
      fakeReply.text('The page is called Home.'),
    );
    const id = await newConversation();
    const stream = await openTurnStream(platform.base, keys.editor, id, {
      content: 'What page is this? [ct-answer]',
    });
    const call = (await stream.until((f) => f.event === 'tool.call', 30_000)).at(-1)!.data as {
      toolCallId: string;
      executor: string;
      deadline: string;
    };
    expect(call).toMatchObject({ name: 'read_page', args: { id: 'home' }, executor: 'client' });
    expect(Date.parse(call.deadline)).toBeGreaterThan(Date.now());
    const waiting = await eventually(async () => {
      const state = await conversation(id);
      expect(state.status).toBe('awaiting_client');
      return state;
    });
    expect(waiting.pendingClientCalls).toEqual([
      { toolCallId: call.toolCallId, tool: 'read_page', args: { id: 'home' }, deadline: call.deadline },
    ]);

    // The operator console's Overview counts it (GET /v1/operator/overview), from a projection of
    // the global log: a commit is placed there shortly after it is on the bus.
    await eventually(async () => expect(await clientCallsPending()).toBe(1));

    // Off the outputSchema, or malformed: 400 naming the field, nothing written.
    const offSchema = await answer(id, call.toolCallId, { ok: true, result: { title: 42 } });
    expect(offSchema.status).toBe(400);
    expect((offSchema.body as { detail: string }).detail).toMatch(/^result\.title /);
    for (const [body, field] of [
      [{ result: {} }, /^ok /],
      [{ ok: false }, /^error /],
      [{ ok: true, result: {}, extra: 1 }, /^extra/],
    ] as const) {
      const refused = await answer(id, call.toolCallId, body);
      expect(refused.status).toBe(400);
      expect((refused.body as { detail: string }).detail).toMatch(field);
    }
    expect((await conversation(id)).version).toBe(waiting.version);
    // Unknown call, another tenant's conversation: 404; a viewer may not answer: 403.
    expect((await answer(id, 'no-such-call', { ok: true, result: { title: 'x' } })).status).toBe(404);
    expect(
      (await answer(id, call.toolCallId, { ok: true, result: { title: 'x' } }, otherEditor)).status,
    ).toBe(404);
    expect(
      (await answer(id, call.toolCallId, { ok: true, result: { title: 'x' } }, keys.viewer)).status,
    ).toBe(403);

    const first = await answer(id, call.toolCallId, { ok: true, result: { title: 'Home' } });
    expect(first).toMatchObject({ status: 200, body: { toolCallId: call.toolCallId } });
    expect((await answer(id, call.toolCallId, { ok: true, result: { title: 'Again' } })).status).toBe(409);

    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    expect(frames.filter((f) => f.event === 'tool.result').map((f) => f.data)).toEqual([
      expect.objectContaining({ toolCallId: call.toolCallId, ok: true, result: { title: 'Home' } }),
    ]);
    expect(frames.at(-1)?.event).toBe('turn.completed');
    const [, second] = modelRequests('[ct-answer]');
    expect(toolMessages(second!).map((m) => m.content)).toEqual([JSON.stringify({ title: 'Home' })]);
    expect((await conversation(id)).status).toBe('idle');
    await eventually(async () => expect(await clientCallsPending()).toBe(0));
  });

  it('approval first: the call waits for a person, then the client answers by a deadline counted from the approval', async () => {
    platform.fake.on(
      lastUserMessageIncludes('[ct-approve]'),
      fakeReply.toolCall('edit_page', { id: 'home' }),
      fakeReply.text('Edited.'),
    );
    const id = await newConversation();
    const stream = await openTurnStream(platform.base, keys.editor, id, {
      content: 'Rename the page [ct-approve]',
    });
    const frames = await stream.until((f) => f.event === 'approval.required', 30_000);
    const call = frames.find((f) => f.event === 'tool.call')!.data as { toolCallId: string };
    expect(call).toMatchObject({ executor: 'client' });
    expect(call).not.toHaveProperty('deadline');
    const { approvalId } = frames.at(-1)!.data as { approvalId: string };
    expect((await conversation(id)).status).toBe('awaiting_approval');
    expect((await conversation(id)).pendingClientCalls).toEqual([]);
    // Not the client's to run yet.
    expect((await answer(id, call.toolCallId, { ok: true, result: { done: true } })).status).toBe(409);

    const decided = await platform.request(
      'POST',
      `/v1/conversations/${id}/approvals/${approvalId}`,
      keys.editor,
      {
        decision: 'approve',
      },
    );
    expect(decided.status).toBe(200);
    const approved = (await stream.until((f) => f.event === 'approval.decided', 30_000)).at(-1)!.data as {
      deadline: string;
    };
    expect(approved).toMatchObject({ decision: 'approve', toolCallId: call.toolCallId });
    const pending = await eventually(async () => {
      const state = await conversation(id);
      expect(state.status).toBe('awaiting_client');
      return state.pendingClientCalls;
    });
    expect(pending).toEqual([
      expect.objectContaining({ toolCallId: call.toolCallId, deadline: approved.deadline }),
    ]);
    expect(
      (await answer(id, call.toolCallId, { ok: false, error: { message: 'the user closed the tab' } }))
        .status,
    ).toBe(200);
    const end = await stream.until((f) => f.event === 'turn.completed', 30_000);
    stream.close();
    expect(end.filter((f) => f.event === 'tool.result').map((f) => f.data)).toEqual([
      expect.objectContaining({
        ok: false,
        error: { code: 'client_error', message: 'the user closed the tab' },
      }),
    ]);
  });

  it('a call whose deadline passes while the agent is SIGKILLed times out once after the restart; a late answer is 409', async () => {
    platform.fake.on(
      lastUserMessageIncludes('[ct-timeout]'),
      fakeReply.toolCall('slow_read', { id: 'home' }),
      fakeReply.text('The page did not answer in time.'),
    );
    const id = await newConversation();
    const sent = await platform.request('POST', `/v1/conversations/${id}/messages`, keys.editor, {
      content: 'Read it slowly [ct-timeout]',
    });
    expect(sent.status).toBe(202);
    const [pending] = await eventually(async () => {
      const calls = (await conversation(id)).pendingClientCalls;
      expect(calls).toHaveLength(1);
      return calls;
    });
    await platform.processes[0]!.kill('SIGKILL');
    // The deadline passes with no agent running.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Date.parse(pending!.deadline) - Date.now()) + 500),
    );
    await platform.restartAgent();

    const frames = await logFrames(id, (f) => f.event === 'turn.completed' || f.event === 'turn.failed');
    const results = frames.filter((f) => f.event === 'tool.result').map((f) => f.data);
    expect(results).toEqual([
      expect.objectContaining({
        toolCallId: pending!.toolCallId,
        ok: false,
        error: expect.objectContaining({ code: 'timeout' }),
      }),
    ]);
    expect(frames.filter((f) => f.event === 'turn.completed')).toHaveLength(1);
    // The model was asked twice: the call, then once with the timeout as the tool's result.
    const requests = modelRequests('[ct-timeout]');
    expect(requests).toHaveLength(2);
    expect(toolMessages(requests[1]!)).toEqual([
      expect.objectContaining({
        tool_call_id: pending!.toolCallId,
        content: expect.stringContaining('timeout'),
      }),
    ]);
    const late = await answer(id, pending!.toolCallId, { ok: true, result: { title: 'Too late' } });
    expect(late.status).toBe(409);
    expect((await conversation(id)).pendingClientCalls).toEqual([]);
  });

  it('over gRPC: tool.call carries executor and deadline, SubmitToolResult answers once', async () => {
    platform.fake.on(
      lastUserMessageIncludes('[ct-grpc]'),
      fakeReply.toolCall('read_page', { id: 'docs' }),
      fakeReply.text('The page is Docs.'),
    );
    const id = await newConversation();
    const grpc = conversationsClient(platform.grpcAddress);
    try {
      const stream = grpc.stream(keys.editor, { conversationId: id, content: 'Which page? [ct-grpc]' });
      const events: Array<{
        event: string;
        toolCall?: { toolCallId: string; executor?: string; deadline?: string };
      }> = [];
      const ended = new Promise<void>((resolve, reject) => {
        stream.on('data', (event: (typeof events)[number]) => {
          events.push(event);
          if (event.event === 'tool.call' && event.toolCall) {
            const { toolCallId } = event.toolCall;
            void grpc
              .unary('submitToolResult', keys.editor, {
                conversationId: id,
                toolCallId,
                ok: true,
                resultJson: JSON.stringify({ title: 'Docs' }),
              })
              .then(async () => {
                const again = grpc.unary('submitToolResult', keys.editor, {
                  conversationId: id,
                  toolCallId,
                  ok: true,
                  resultJson: '{"title":"Docs"}',
                });
                expect(await codeOf(again)).toBe(status.ABORTED);
              }, reject);
          }
        });
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      await ended;
      const call = events.find((e) => e.event === 'tool.call')!.toolCall!;
      expect(call.executor).toBe('client');
      expect(Date.parse(call.deadline ?? '')).toBeGreaterThan(0);
      expect(events.map((e) => e.event)).toContain('turn.completed');
      const [, second] = modelRequests('[ct-grpc]');
      expect(toolMessages(second!).map((m) => m.content)).toEqual([JSON.stringify({ title: 'Docs' })]);
    } finally {
      grpc.close();
    }
  });
});
