// API.md's walk-through over HTTP, the way a tenant's backend would do it: the gateway, the agent
// and the tools service as separate processes on real NATS and MongoDB, the model played by the
// test kit's fake OpenAI server and the tool by the e2e webhook server. Operator → tenant and keys;
// admin → webhook secret, a tool that needs approval, an agent; editor → conversation, message,
// approval; viewer reads only; another tenant sees nothing; bad input is refused by field name.
import type { FakeOpenAI } from '@keel/testkit';
import { eventually, fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { WebhookServer } from './support/webhook-server.js';

interface Problem {
  status: number;
  code: string;
  detail: string;
}

interface ConversationBody {
  id: string;
  agentId: string;
  status: string;
  version: number;
  messages: Array<{
    id: string;
    role: string;
    content: string;
    toolCalls?: Array<{ name: string; args: unknown }>;
  }>;
  pendingApprovals: Array<{
    approvalId: string;
    toolCallId: string;
    tool: string;
    args: unknown;
    requestedAt: string;
  }>;
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
}

describe('the public API walk-through (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let fake: FakeOpenAI;
  let webhook: WebhookServer;
  let OPERATOR_KEY = '';
  let base = '';

  const call = async (
    method: string,
    path: string,
    key: string,
    options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: unknown; contentType: string }> => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...options.headers };
    const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(payload !== undefined ? { body: payload } : {}),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
      contentType: response.headers.get('content-type') ?? '',
    };
  };

  /** Asserts a problem+json answer and returns it. */
  const problem = (
    answer: { status: number; body: unknown; contentType: string },
    status: number,
    code: string,
  ) => {
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    expect(answer.contentType).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({ status, code });
    return answer.body as Problem;
  };

  const keys = { admin: '', editor: '', viewer: '', otherAdmin: '' };

  const issue = async (tenantId: string, role: string): Promise<string> => {
    const issued = await call('POST', `/v1/tenants/${tenantId}/keys`, OPERATOR_KEY, { body: { role } });
    expect(issued.status).toBe(201);
    return (issued.body as { key: string }).key;
  };

  const conversation = async (id: string, key = keys.viewer): Promise<ConversationBody> => {
    const answer = await call('GET', `/v1/conversations/${id}`, key);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body as ConversationBody;
  };

  const waitFor = (id: string, status: string) =>
    eventually(
      async () => {
        const state = await conversation(id);
        expect(state.status).toBe(status);
        return state;
      },
      { timeoutMs: 30_000, intervalMs: 150 },
    );

  beforeAll(async () => {
    platform = await startGatewayPlatform('gwapi');
    ({ fake, webhook, base, operatorKey: OPERATOR_KEY } = platform);
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('operator: creates two tenants and their admin, editor and viewer keys', async () => {
    const tenant = await call('POST', '/v1/tenants', OPERATOR_KEY, { body: { name: 'Acme' } });
    expect(tenant.status).toBe(201);
    const tenantId = (tenant.body as { id: string }).id;
    keys.admin = await issue(tenantId, 'admin');
    keys.editor = await issue(tenantId, 'editor');
    keys.viewer = await issue(tenantId, 'viewer');
    const other = await call('POST', '/v1/tenants', OPERATOR_KEY, { body: { name: 'Globex' } });
    keys.otherAdmin = await issue((other.body as { id: string }).id, 'admin');
  });

  it('admin: sets the webhook secret, a tool that needs approval and an agent', async () => {
    const secret = await call('POST', '/v1/webhook-secret', keys.admin);
    expect(secret.status).toBe(201);
    webhook.setSecret((secret.body as { secret: string }).secret);

    const schema = {
      type: 'object',
      properties: { id: { type: 'string' }, amount: { type: 'number' } },
      required: ['id'],
    };
    const tool = await call('PUT', '/v1/tools/refund', keys.admin, {
      body: {
        description: 'Refund an order',
        inputSchema: schema,
        kind: 'webhook',
        url: webhook.url,
        approval: 'always',
        roles: ['editor', 'admin'],
        timeoutMs: 10_000,
      },
    });
    expect(tool.status, JSON.stringify(tool.body)).toBe(200);
    expect(tool.body).toMatchObject({
      name: 'refund',
      inputSchema: schema,
      approval: 'always',
      url: webhook.url,
      builtin: false,
    });

    const listed = await call('GET', '/v1/tools', keys.admin);
    expect(
      (listed.body as { data: Array<{ name: string; builtin: boolean }> }).data.map(({ name, builtin }) => ({
        name,
        builtin,
      })),
    ).toEqual([
      { name: 'current_time', builtin: true },
      { name: 'calculator', builtin: true },
      { name: 'refund', builtin: false },
    ]);

    const agentBody = {
      model: 'openai:gpt-4o-mini',
      instructions: 'Help with refunds.',
      tools: ['refund'],
      maxSteps: 4,
      temperature: 0,
    };
    const put = await call('PUT', '/v1/agents/support', keys.admin, { body: agentBody });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ id: 'support', ...agentBody });
    expect((await call('GET', '/v1/agents/support', keys.admin)).body).toEqual(put.body);
    expect((await call('GET', '/v1/agents', keys.admin)).body).toEqual({ data: [put.body] });
    problem(await call('GET', '/v1/agents/nobody', keys.admin), 404, 'not_found');

    const provider = await call('PUT', '/v1/providers/openai', keys.admin, {
      body: { baseUrl: fake.url, apiKey: 'sk-tenant-e2e' },
    });
    expect(provider).toMatchObject({ status: 200, body: { provider: 'openai', configured: true } });
  });

  it('only admin keys touch the configuration', async () => {
    problem(await call('GET', '/v1/tools', keys.editor), 403, 'forbidden');
    problem(
      await call('PUT', '/v1/agents/x', keys.viewer, { body: { model: 'openai:x' } }),
      403,
      'forbidden',
    );
  });

  let conversationId = '';
  let approvalId = '';

  it('editor: opens a conversation and sends a message (202); the turn pauses for approval', async () => {
    fake.on(
      lastUserMessageIncludes('refund 20 on B-2'),
      fakeReply.toolCall('refund', { id: 'B-2', amount: 20 }),
      fakeReply.text('Refunded 20 on B-2.'),
    );
    const created = await call('POST', '/v1/conversations', keys.editor, {
      body: { agentId: 'support', title: 'Refund' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      agentId: 'support',
      status: 'idle',
      createdAt: expect.any(String),
    });
    conversationId = (created.body as { id: string }).id;

    const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, keys.editor, {
      body: { content: 'Please refund 20 on B-2' },
      headers: { 'x-keel-user': 'ana' },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body).toEqual({ turnId: expect.any(String) });

    const paused = await waitFor(conversationId, 'awaiting_approval');
    expect(paused.pendingApprovals).toEqual([
      {
        approvalId: expect.any(String),
        toolCallId: expect.any(String),
        tool: 'refund',
        args: { id: 'B-2', amount: 20 },
        requestedAt: expect.any(String),
      },
    ]);
    approvalId = paused.pendingApprovals[0]!.approvalId;
    expect(webhook.hits.filter((h) => h.body.conversationId === conversationId)).toHaveLength(0);
  });

  it('a second message while the turn waits is a 409 conflict, streamed or not (problem+json before any frame)', async () => {
    problem(
      await call('POST', `/v1/conversations/${conversationId}/messages`, keys.editor, {
        body: { content: 'hello?' },
      }),
      409,
      'conflict',
    );
    problem(
      await call('POST', `/v1/conversations/${conversationId}/messages`, keys.editor, {
        body: { content: 'hello?' },
        headers: { accept: 'text/event-stream' },
      }),
      409,
      'conflict',
    );
  });

  it('editor approves; the tool runs once and the turn completes; a second decision is 409', async () => {
    const decided = await call(
      'POST',
      `/v1/conversations/${conversationId}/approvals/${approvalId}`,
      keys.editor,
      {
        body: { decision: 'approve' },
      },
    );
    expect(decided).toMatchObject({ status: 200, body: { approvalId, decision: 'approve' } });
    const done = await waitFor(conversationId, 'idle');
    expect(done.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(done.messages[1]?.toolCalls).toEqual([
      { id: expect.any(String), name: 'refund', args: { id: 'B-2', amount: 20 } },
    ]);
    expect(done.messages.at(-1)?.content).toBe('Refunded 20 on B-2.');
    expect(done.pendingApprovals).toEqual([]);
    expect(done.usage.promptTokens).toBeGreaterThan(0);
    expect(done.version).toBeGreaterThan(5);
    const hits = webhook.hits.filter((h) => h.body.conversationId === conversationId);
    expect(hits).toHaveLength(1);
    expect(hits[0]!.signatureValid).toBe(true);

    problem(
      await call('POST', `/v1/conversations/${conversationId}/approvals/${approvalId}`, keys.editor, {
        body: { decision: 'deny' },
      }),
      409,
      'conflict',
    );
    problem(
      await call('POST', `/v1/conversations/${conversationId}/approvals/no-such`, keys.editor, {
        body: { decision: 'approve' },
      }),
      404,
      'not_found',
    );
    problem(await call('POST', `/v1/conversations/${conversationId}/cancel`, keys.editor), 409, 'conflict');
  });

  it('editor cancels a running turn (202 { turnId }); the model call is aborted and the conversation is idle', async () => {
    fake.on(lastUserMessageIncludes('think forever'), fakeReply.hang());
    const created = await call('POST', '/v1/conversations', keys.editor, { body: { agentId: 'support' } });
    const id = (created.body as { id: string }).id;
    const seen = fake.requests.length;
    const sent = await call('POST', `/v1/conversations/${id}/messages`, keys.editor, {
      body: { content: 'Please think forever' },
    });
    expect(sent.status).toBe(202);
    const hanging = await fake.waitForRequest(seen, 30_000);
    const cancelled = await call('POST', `/v1/conversations/${id}/cancel`, keys.editor);
    expect(cancelled).toMatchObject({
      status: 202,
      body: { turnId: (sent.body as { turnId: string }).turnId },
    });
    await fake.waitForClientClose(hanging.index, 15_000);
    await waitFor(id, 'idle');
    problem(await call('POST', `/v1/conversations/${id}/cancel`, keys.viewer), 403, 'forbidden');
  });

  it('viewer reads but may not write; another tenant gets 404', async () => {
    expect((await conversation(conversationId, keys.viewer)).id).toBe(conversationId);
    problem(
      await call('POST', `/v1/conversations/${conversationId}/messages`, keys.viewer, {
        body: { content: 'hi' },
      }),
      403,
      'forbidden',
    );
    problem(await call('GET', `/v1/conversations/${conversationId}`, keys.otherAdmin), 404, 'not_found');
    problem(
      await call('POST', `/v1/conversations/${conversationId}/messages`, keys.otherAdmin, {
        body: { content: 'hi' },
      }),
      404,
      'not_found',
    );
  });

  it('refuses bad input with 400 naming the field, and writes nothing', async () => {
    const malformed = problem(
      await call('POST', '/v1/conversations', keys.editor, { raw: '{"agentId": ' }),
      400,
      'invalid_request',
    );
    expect(malformed.detail).toContain('body');
    const unknownField = problem(
      await call('POST', '/v1/conversations', keys.editor, { body: { agentId: 'support', colour: 'red' } }),
      400,
      'invalid_request',
    );
    expect(unknownField.detail).toContain('colour');
    const wrongType = problem(
      await call('PUT', '/v1/tools/lookup', keys.admin, {
        body: { description: 'x', inputSchema: { type: 'object' }, timeoutMs: 'soon' },
      }),
      400,
      'invalid_request',
    );
    expect(wrongType.detail).toContain('timeoutMs');
    const unknownTool = problem(
      await call('PUT', '/v1/agents/support', keys.admin, {
        body: { model: 'openai:gpt-4o-mini', tools: ['refund', 'teleport'] },
      }),
      400,
      'invalid_request',
    );
    expect(unknownTool.detail).toContain('teleport');
    // Nothing was written: the agent and the tool list are as before.
    expect((await call('GET', '/v1/agents/support', keys.admin)).body).toMatchObject({ tools: ['refund'] });
    expect((await call('GET', '/v1/tools', keys.admin)).body).not.toMatchObject({
      data: expect.arrayContaining([expect.objectContaining({ name: 'lookup' })]),
    });
    problem(
      await call('POST', '/v1/conversations', keys.editor, { body: { agentId: 'nobody' } }),
      404,
      'not_found',
    );
  });

  it('refuses huge bodies (413), over-long messages, bad ids and unknown approvals; writes nothing', async () => {
    const created = await call('POST', '/v1/conversations', keys.editor, { body: { agentId: 'support' } });
    expect(created.status).toBe(201);
    const id = (created.body as { id: string }).id;
    const before = await conversation(id);
    problem(
      await call('POST', `/v1/conversations/${id}/messages`, keys.editor, {
        raw: JSON.stringify({ content: 'x'.repeat(1024 * 1024 + 1) }),
      }),
      413,
      'payload_too_large',
    );
    const tooLong = problem(
      await call('POST', `/v1/conversations/${id}/messages`, keys.editor, {
        body: { content: 'x'.repeat(100_001) },
      }),
      400,
      'invalid_request',
    );
    expect(tooLong.detail).toContain('content');
    problem(await call('GET', '/v1/conversations/..%2F..%2Fetc', keys.viewer), 404, 'not_found');
    problem(
      await call('POST', `/v1/conversations/not-a-conversation/messages`, keys.editor, {
        body: { content: 'hi' },
      }),
      404,
      'not_found',
    );
    problem(
      await call('POST', `/v1/conversations/${id}/approvals/apr_unknown`, keys.editor, {
        body: { decision: 'approve' },
      }),
      404,
      'not_found',
    );
    const after = await conversation(id);
    expect(after.version).toBe(before.version);
    expect(after.messages).toEqual([]);
  });

  it('a revoked key stops working at once (401), on reads and writes', async () => {
    const tenant = await call('POST', '/v1/tenants', OPERATOR_KEY, { body: { name: 'Initech' } });
    const tenantId = (tenant.body as { id: string }).id;
    const issued = await call('POST', `/v1/tenants/${tenantId}/keys`, OPERATOR_KEY, {
      body: { role: 'admin' },
    });
    const { id: keyId, key } = issued.body as { id: string; key: string };
    expect((await call('GET', '/v1/agents', key)).status).toBe(200);
    expect((await call('DELETE', `/v1/tenants/${tenantId}/keys/${keyId}`, OPERATOR_KEY)).status).toBe(204);
    problem(await call('GET', '/v1/agents', key), 401, 'unauthenticated');
    problem(
      await call('PUT', '/v1/agents/late', key, { body: { model: 'openai:gpt-4o-mini' } }),
      401,
      'unauthenticated',
    );
  });

  it('editor lists conversations newest first, a page at a time; another tenant does not see them', async () => {
    type Page = { data: Array<{ id: string; agentId: string; status?: string }>; nextCursor: string | null };
    const list = async (query: string, key = keys.editor): Promise<Page> => {
      const answer = await call('GET', `/v1/conversations${query}`, key);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body as Page;
    };
    const created = await call('POST', '/v1/conversations', keys.editor, {
      body: { agentId: 'support', title: 'Listed' },
    });
    const newest = (created.body as { id: string }).id;

    const all = await list('');
    expect(all.nextCursor).toBeNull();
    expect(all.data[0]).toMatchObject({ id: newest, agentId: 'support', title: 'Listed', status: 'idle' });
    expect(all.data.map((c) => c.id)).toContain(conversationId);
    expect(all.data.length).toBeGreaterThanOrEqual(3);

    const first = await list('?limit=1');
    expect(first.data.map((c) => c.id)).toEqual([newest]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await list(`?limit=1&cursor=${encodeURIComponent(first.nextCursor ?? '')}`);
    expect(second.data.map((c) => c.id)).toEqual([all.data[1]?.id]);

    expect((await list('', keys.viewer)).data.map((c) => c.id)).toEqual(all.data.map((c) => c.id));
    const theirs = await list('', keys.otherAdmin);
    expect(theirs.data.map((c) => c.id)).not.toContain(newest);
    expect(theirs.data.map((c) => c.id)).not.toContain(conversationId);

    expect(
      problem(await call('GET', '/v1/conversations?limit=101', keys.editor), 400, 'invalid_request').detail,
    ).toContain('limit');
    expect(
      problem(await call('GET', '/v1/conversations?limit=0', keys.editor), 400, 'invalid_request').detail,
    ).toContain('limit');
    expect(
      problem(await call('GET', '/v1/conversations?cursor=bm9wZQ', keys.editor), 400, 'invalid_request')
        .detail,
    ).toContain('cursor');
  });
});
