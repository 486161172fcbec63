// Tenant isolation over HTTP, with the gateway, the agent and the tools service as separate
// processes on real NATS and MongoDB: tenant Acme has a configured agent, a tool, a provider
// credential and a conversation waiting for an approval; tenant Globex tries every tenant route on
// them with its own keys. Each is a 404 (or, for lists and configuration, Globex's own data only),
// no body carries anything of Acme's, and Acme's conversation and configuration are unchanged.
import type { FakeOpenAI } from '@keel/testkit';
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { Answer } from './support/http.js';
import { answerOf } from './support/http.js';
import type { WebhookServer } from './support/webhook-server.js';
// Acme's data: none of these may appear in any answer Globex gets.
const SECRETS = {
  instructions: 'ACME-INSTRUCTIONS-7f3a',
  toolDescription: 'ACME-TOOL-DESCRIPTION-91c2',
  message: 'ACME-PRIVATE-MESSAGE-42bb',
  apiKey: 'sk-acme-provider-secret-0d9e',
  orderId: 'ACME-ORDER-55e1',
};

describe('tenant isolation (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let fake: FakeOpenAI;
  let webhook: WebhookServer;
  const acme = { id: '', admin: '', editor: '', viewer: '' };
  const globex = { id: '', admin: '', editor: '', viewer: '' };
  let conversationId = '';
  let approvalId = '';

  const call = async (
    method: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer> => answerOf(await platform.request(method, path, key, body, headers));

  /** The answer's body names nothing of Acme's (its secrets, its approval, its turn). */
  const leaksNothing = (answer: Answer) => {
    for (const secret of [...Object.values(SECRETS), approvalId]) {
      expect(answer.text, `${answer.status} ${answer.text}`).not.toContain(secret);
    }
  };

  /** A 404 `not_found` problem that names nothing of Acme's. */
  const notFound = (answer: Answer) => {
    expect(answer.status, answer.text).toBe(404);
    expect(answer.body).toMatchObject({ status: 404, code: 'not_found' });
    leaksNothing(answer);
  };

  const acmeConversation = async () => {
    const answer = await call('GET', `/v1/conversations/${conversationId}`, acme.viewer);
    expect(answer.status).toBe(200);
    return answer.body as {
      status: string;
      version: number;
      messages: unknown[];
      pendingApprovals: unknown[];
    };
  };

  const tenant = async (name: string, into: typeof acme) => {
    const { id, keys } = await platform.tenantWithKeys(name, ['admin', 'editor', 'viewer'] as const);
    Object.assign(into, { id, ...keys });
  };

  beforeAll(async () => {
    platform = await startGatewayPlatform('isolation');
    ({ fake, webhook } = platform);
    await tenant('Acme', acme);
    await tenant('Globex', globex);
    webhook.setSecret(
      ((await call('POST', '/v1/webhook-secret', acme.admin)).body as { secret: string }).secret,
    );
    const tool = await call('PUT', '/v1/tools/refund', acme.admin, {
      description: SECRETS.toolDescription,
      inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
      kind: 'webhook',
      url: webhook.url,
      approval: 'always',
    });
    expect(tool.status, tool.text).toBe(200);
    const agent = await call('PUT', '/v1/agents/support', acme.admin, {
      model: 'openai:gpt-4o-mini',
      instructions: SECRETS.instructions,
      tools: ['refund'],
      maxSteps: 4,
    });
    expect(agent.status, agent.text).toBe(200);
    const provider = await call('PUT', '/v1/providers/openai', acme.admin, {
      apiKey: SECRETS.apiKey,
      baseUrl: fake.url,
    });
    expect(provider.status, provider.text).toBe(200);

    fake.on(
      lastUserMessageIncludes(SECRETS.message),
      fakeReply.toolCall('refund', { id: SECRETS.orderId }),
      fakeReply.text('Refunded.'),
    );
    const created = await call('POST', '/v1/conversations', acme.editor, { agentId: 'support' });
    conversationId = (created.body as { id: string }).id;
    const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, acme.editor, {
      content: SECRETS.message,
    });
    expect(sent.status, sent.text).toBe(202);
    const deadline = Date.now() + 30_000;
    while ((await acmeConversation()).status !== 'awaiting_approval') {
      if (Date.now() > deadline) throw new Error('the turn did not pause for approval');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    approvalId = ((await acmeConversation()).pendingApprovals[0] as { approvalId: string }).approvalId;
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("answers every conversation route on Acme's conversation with 404 for each Globex key, and changes nothing", async () => {
    const before = await acmeConversation();
    const path = `/v1/conversations/${conversationId}`;
    for (const key of [globex.admin, globex.editor, globex.viewer]) {
      notFound(await call('GET', path, key));
      notFound(await call('GET', `${path}/events`, key));
      notFound(await call('GET', `${path}/events?after=1`, key, undefined, { 'last-event-id': '2' }));
    }
    for (const key of [globex.admin, globex.editor]) {
      notFound(await call('POST', `${path}/messages`, key, { content: 'hi' }));
      notFound(
        await call('POST', `${path}/messages`, key, { content: 'hi' }, { accept: 'text/event-stream' }),
      );
      notFound(await call('POST', `${path}/messages`, key, { content: 'hi', ifBusy: 'interrupt' }));
      notFound(await call('POST', `${path}/approvals/${approvalId}`, key, { decision: 'approve' }));
      notFound(await call('POST', `${path}/approvals/${approvalId}`, key, { decision: 'deny' }));
      notFound(await call('POST', `${path}/cancel`, key));
    }
    // The same answers as for a conversation that does not exist at all.
    const missing = await call(
      'GET',
      '/v1/conversations/00000000-0000-7000-8000-000000000000',
      globex.viewer,
    );
    const foreign = await call('GET', path, globex.viewer);
    expect({ ...(foreign.body as object), detail: '' }).toEqual({ ...(missing.body as object), detail: '' });

    const after = await acmeConversation();
    expect(after).toEqual(before);
    expect(after.status).toBe('awaiting_approval');
    expect(webhook.hits).toHaveLength(0);
  });

  it("lists only the caller's own conversations, tools and agents", async () => {
    const own = await call('POST', '/v1/conversations', globex.editor, { agentId: 'support' });
    // Globex has no agent `support`: Acme's is not found either.
    notFound(own);
    const listed = await call('GET', '/v1/conversations', globex.viewer);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [], nextCursor: null });
    leaksNothing(listed);

    const tools = await call('GET', '/v1/tools', globex.admin);
    expect(tools.status).toBe(200);
    expect(
      (tools.body as { data: Array<{ name: string; builtin: boolean }> }).data.every((t) => t.builtin),
    ).toBe(true);
    leaksNothing(tools);
    const agents = await call('GET', '/v1/agents', globex.admin);
    expect(agents).toMatchObject({ status: 200, body: { data: [] } });
    notFound(await call('GET', '/v1/agents/support', globex.admin));
  });

  it("configuration writes land in the caller's tenant only: Acme's agent, tool, provider and webhook secret are untouched", async () => {
    const acmeAgent = (await call('GET', '/v1/agents/support', acme.admin)).body;
    const acmeTools = (await call('GET', '/v1/tools', acme.admin)).body;

    // Acme's tool is unknown to Globex: an agent naming it is refused.
    const refused = await call('PUT', '/v1/agents/helper', globex.admin, {
      model: 'openai:x',
      tools: ['refund'],
    });
    expect(refused.status, refused.text).toBe(400);
    leaksNothing(refused);
    const tool = await call('PUT', '/v1/tools/refund', globex.admin, {
      description: 'Globex refunds',
      inputSchema: { type: 'object' },
      kind: 'webhook',
      url: 'http://127.0.0.1:9/globex',
    });
    expect(tool.status, tool.text).toBe(200);
    leaksNothing(tool);
    const agent = await call('PUT', '/v1/agents/support', globex.admin, {
      model: 'openai:globex',
      tools: [],
    });
    expect(agent.status, agent.text).toBe(200);
    leaksNothing(agent);
    const provider = await call('PUT', '/v1/providers/openai', globex.admin, { apiKey: 'sk-globex' });
    expect(provider).toMatchObject({ status: 200, body: { provider: 'openai', configured: true } });
    const secret = await call('POST', '/v1/webhook-secret', globex.admin);
    expect(secret.status).toBe(201);
    leaksNothing(secret);

    expect((await call('GET', '/v1/agents/support', acme.admin)).body).toEqual(acmeAgent);
    expect((await call('GET', '/v1/tools', acme.admin)).body).toEqual(acmeTools);
    expect((await call('GET', '/v1/agents', globex.admin)).body).toMatchObject({
      data: [{ id: 'support', model: 'openai:globex' }],
    });

    // Acme's turn still runs on Acme's provider key and signs with Acme's webhook secret.
    const decided = await call(
      'POST',
      `/v1/conversations/${conversationId}/approvals/${approvalId}`,
      acme.editor,
      {
        decision: 'approve',
      },
    );
    expect(decided.status, decided.text).toBe(200);
    const deadline = Date.now() + 30_000;
    while ((await acmeConversation()).status !== 'idle') {
      if (Date.now() > deadline) throw new Error('the turn did not complete');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(webhook.hits).toHaveLength(1);
    expect(webhook.hits[0]).toMatchObject({ signatureValid: true, body: { tenantId: acme.id } });
    const acmeCalls = fake.requests.filter((r) => r.rawBody.includes(SECRETS.message));
    expect(acmeCalls.length).toBeGreaterThan(0);
    expect(acmeCalls.every((r) => r.authorization.last4 === SECRETS.apiKey.slice(-4))).toBe(true);
  });

  it("keeps Idempotency-Keys per tenant: Globex's key equal to Acme's does not get Acme's response", async () => {
    const first = await call(
      'POST',
      '/v1/conversations',
      acme.editor,
      { agentId: 'support' },
      { 'idempotency-key': 'same' },
    );
    expect(first.status).toBe(201);
    const replay = await call(
      'POST',
      '/v1/conversations',
      acme.editor,
      { agentId: 'support' },
      { 'idempotency-key': 'same' },
    );
    expect(replay).toMatchObject({ status: 201, body: first.body });
    const other = await call(
      'POST',
      '/v1/conversations',
      globex.editor,
      { agentId: 'support' },
      { 'idempotency-key': 'same' },
    );
    expect(other.status, other.text).toBe(201);
    expect((other.body as { id: string }).id).not.toBe((first.body as { id: string }).id);
    notFound(await call('GET', `/v1/conversations/${(first.body as { id: string }).id}`, globex.viewer));
  });

  it('tenant keys never reach the operator routes (403), whatever tenant they name', async () => {
    for (const path of [`/v1/tenants/${acme.id}/keys`, `/v1/tenants/${globex.id}/keys`]) {
      const answer = await call('POST', path, globex.admin, { role: 'admin' });
      expect(answer.status).toBe(403);
      leaksNothing(answer);
    }
    const tenants = await call('GET', '/v1/tenants', globex.admin);
    expect(tenants.status).toBe(403);
    expect(tenants.text).not.toContain(acme.id);
  });
});
