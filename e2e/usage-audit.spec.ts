// Usage and audit through the public API: gateway, agent, tools and audit as separate processes on
// real NATS and FerretDB, the model played by the fake OpenAI server. Turns of two tenants and
// three acting users (X-Keel-User) show up in GET /v1/usage per user and per local day, each
// tenant seeing only its own; the operator reads any tenant by tenantId; bad queries are 400 with
// the field named; GET /v1/audit shows key issuance and configuration changes with their actors
// and request ids, newest first, without a secret.
import type { ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf } from './support/http.js';
import { startAudit } from './support/platform.js';

interface Figures {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  turns: number;
}
interface UsageBody {
  totals: Figures;
  rows: Array<Figures & { key: string }>;
}
interface AuditBody {
  data: Array<{
    id: string;
    at: string;
    type: string;
    target: string;
    actor: { keyId: string; role: string; userId: string };
    requestId: string;
    details: Record<string, string>;
  }>;
  nextCursor: string | null;
}

const day = (offsetDays: number): string =>
  new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

describe('usage and audit through the gateway (gateway, agent, tools, audit as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  const acme = { id: '', keys: { admin: '', editor: '', viewer: '' } };
  const globex = { id: '', keys: { admin: '', editor: '', viewer: '' } };

  const get = async (path: string, key: string) => answerOf(await platform.request('GET', path, key));

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('usageaudit', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      // Costs priced by the pricing service, as in production.
      pricingFor: ['agent'],
    });
    audit = await startAudit(platform.env, auditPort);
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('runs turns of two tenants and three users, then answers usage per user and per local day', async () => {
    Object.assign(acme, await platform.tenantWithKeys('Acme', ['admin', 'editor', 'viewer'] as const));
    Object.assign(globex, await platform.tenantWithKeys('Globex', ['admin', 'editor', 'viewer'] as const));
    for (const [tenant, request] of [
      [acme, 'req-acme-agent'],
      [globex, 'req-globex-agent'],
    ] as const) {
      const provider = await platform.request(
        'PUT',
        '/v1/providers/openai',
        tenant.keys.admin,
        { baseUrl: platform.fake.url, apiKey: 'sk-tenant-secret-123' },
        { 'x-request-id': `${request}-provider` },
      );
      expect(provider.status).toBe(200);
      const agent = await platform.request(
        'PUT',
        '/v1/agents/chat',
        tenant.keys.admin,
        { model: 'openai:gpt-4o-mini', maxSteps: 2 },
        { 'x-request-id': request },
      );
      expect(agent.status).toBe(200);
    }
    // One reply per turn (a scripted reply is used once).
    const reply = fakeReply.text('hi', { usage: { promptTokens: 11, completionTokens: 5 } });
    platform.fake.on(lastUserMessageIncludes('hello'), reply, reply, reply, reply);

    const turn = async (key: string, user: string) => {
      const created = await answerOf(
        await platform.request(
          'POST',
          '/v1/conversations',
          key,
          { agentId: 'chat' },
          { 'x-keel-user': user },
        ),
      );
      expect(created.status, created.text).toBe(201);
      const id = (created.body as { id: string }).id;
      const sent = await platform.request(
        'POST',
        `/v1/conversations/${id}/messages`,
        key,
        { content: 'hello' },
        {
          'x-keel-user': user,
        },
      );
      expect(sent.status).toBe(202);
      await eventually(
        async () => {
          const state = await get(`/v1/conversations/${id}`, key);
          expect(state.body).toMatchObject({
            status: 'idle',
            usage: { promptTokens: 11, completionTokens: 5 },
          });
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
    };
    await turn(acme.keys.editor, 'alice');
    await turn(acme.keys.editor, 'alice');
    await turn(acme.keys.editor, 'bob');
    await turn(globex.keys.editor, 'carol');

    const range = `from=${day(-1)}&to=${day(1)}`;
    const row = (key: string, turns: number) => ({
      key,
      promptTokens: 11 * turns,
      completionTokens: 5 * turns,
      costUsd: expect.any(Number) as number,
      turns,
    });
    await eventually(
      async () => {
        const byUser = await get(`/v1/usage?${range}&groupBy=user`, acme.keys.viewer);
        expect(byUser.status, byUser.text).toBe(200);
        expect((byUser.body as UsageBody).rows).toEqual([row('alice', 2), row('bob', 1)]);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const acmeUsers = (await get(`/v1/usage?${range}&groupBy=user`, acme.keys.viewer)).body as UsageBody;
    expect(acmeUsers.totals).toMatchObject({ promptTokens: 33, completionTokens: 15, turns: 3 });
    const globexUsers = await eventually(
      async () => {
        const answer = (await get(`/v1/usage?${range}&groupBy=user`, globex.keys.viewer)).body as UsageBody;
        expect(answer.rows).toEqual([row('carol', 1)]);
        return answer;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(globexUsers.totals.turns).toBe(1);

    // Per local day in three zones: the days differ, the totals do not.
    for (const tz of ['America/Los_Angeles', 'Asia/Kolkata', 'UTC']) {
      const byDay = await get(
        `/v1/usage?${range}&groupBy=day&tz=${encodeURIComponent(tz)}`,
        acme.keys.viewer,
      );
      expect(byDay.status).toBe(200);
      const body = byDay.body as UsageBody;
      expect(body.totals).toEqual(acmeUsers.totals);
      expect(body.rows.reduce((sum, r) => sum + r.turns, 0)).toBe(3);
      for (const r of body.rows) expect(r.key).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    const byModel = (await get(`/v1/usage?${range}&groupBy=model`, acme.keys.viewer)).body as UsageBody;
    expect(byModel.rows.map((r) => [r.key, r.turns])).toEqual([[expect.stringContaining('gpt-4o-mini'), 3]]);

    // The operator reads a tenant by id; the same answer as the tenant's own.
    const operator = await get(`/v1/usage?${range}&groupBy=user&tenantId=${acme.id}`, platform.operatorKey);
    expect(operator.status).toBe(200);
    expect(operator.body).toEqual(acmeUsers);
  });

  it('refuses bad usage queries with 400 naming the field, and wrong tenants or roles', async () => {
    const refused = async (query: string, key: string, status: number, code: string, field?: string) => {
      const answer = await get(`/v1/usage?${query}`, key);
      expect(answer.status, answer.text).toBe(status);
      expect(answer.contentType).toMatch(/^application\/problem\+json/);
      expect(answer.body).toMatchObject({ status, code });
      if (field) expect((answer.body as { detail: string }).detail).toMatch(new RegExp(`^${field}\\b`));
    };
    const ok = `from=${day(-1)}&to=${day(1)}`;
    await refused(`${ok}&tz=Mars/Olympus_Mons`, acme.keys.viewer, 400, 'invalid_request', 'tz');
    await refused(`from=${day(1)}&to=${day(-1)}`, acme.keys.viewer, 400, 'invalid_request', 'from');
    await refused(`from=2016-01-01&to=2026-01-01`, acme.keys.viewer, 400, 'invalid_request', 'to');
    await refused(`${ok}&groupBy=week`, acme.keys.viewer, 400, 'invalid_request', 'groupBy');
    await refused(`to=${day(1)}`, acme.keys.viewer, 400, 'invalid_request', 'from');
    await refused(`from=2026-02-30&to=2026-03-01`, acme.keys.viewer, 400, 'invalid_request', 'from');
    // A tenant key may not name a tenant (not even its own), nor group by tenant; the operator
    // names one or reads every tenant (e2e/operator-routes.spec.ts).
    await refused(`${ok}&tenantId=${globex.id}`, acme.keys.viewer, 400, 'invalid_request', 'tenantId');
    await refused(`${ok}&groupBy=tenant`, acme.keys.viewer, 400, 'invalid_request', 'groupBy');
    await refused(`${ok}&tenantId=no-such-tenant`, platform.operatorKey, 404, 'not_found');
    await refused(ok, 'not-a-key', 401, 'unauthenticated');
  });

  it('shows the audit trail to admins and the operator: who, what, when, which request; no secret', async () => {
    const trail = await eventually(
      async () => {
        const answer = await get('/v1/audit', acme.keys.admin);
        expect(answer.status, answer.text).toBe(200);
        const body = answer.body as AuditBody;
        // The acme turns of the first test ended: each is in the trail; the other entries in order.
        const ended = body.data.filter((e) => e.type === 'TurnCompleted');
        expect(ended.length).toBeGreaterThan(0);
        expect(ended.every((e) => (e.details as { finishReason?: string }).finishReason === 'stop')).toBe(
          true,
        );
        expect(body.data.filter((e) => e.type !== 'TurnCompleted').map((e) => e.type)).toEqual([
          'AgentConfigured',
          'ProviderConfigured',
          'KeyIssued',
          'KeyIssued',
          'KeyIssued',
          'TenantCreated',
        ]);
        return body;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const entries = trail.data.filter((e) => e.type !== 'TurnCompleted');
    expect(entries[0]).toMatchObject({
      target: 'agent:chat',
      requestId: 'req-acme-agent',
      actor: { role: 'admin', keyId: expect.stringMatching(/.+/) as string },
      details: { model: 'openai:gpt-4o-mini' },
    });
    expect(entries[1]).toMatchObject({
      target: 'provider:openai',
      requestId: 'req-acme-agent-provider',
      details: { apiKeySet: 'true' },
    });
    expect(entries[2]).toMatchObject({
      actor: { keyId: 'operator', role: 'operator' },
      details: { role: 'viewer' },
      requestId: expect.stringMatching(/.+/) as string,
    });
    expect(JSON.stringify(trail)).not.toContain('sk-tenant-secret-123');
    const times = trail.data.map((e) => e.at);
    expect([...times].sort().reverse()).toEqual(times);

    // Pages of one, by the opaque cursor, give the same entries.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `limit=1&cursor=${encodeURIComponent(cursor)}` : 'limit=1';
      const page = (await get(`/v1/audit?${query}`, acme.keys.admin)).body as AuditBody;
      paged.push(...page.data.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(paged).toEqual(trail.data.map((e) => e.id));
    const keyEvents = (await get('/v1/audit?type=KeyIssued', acme.keys.admin)).body as AuditBody;
    expect(keyEvents.data).toHaveLength(3);

    // The operator reads it by tenantId; another tenant's admin sees only its own; viewers may not.
    const byOperator = await get(`/v1/audit?tenantId=${acme.id}`, platform.operatorKey);
    expect((byOperator.body as AuditBody).data.map((e) => e.id)).toEqual(trail.data.map((e) => e.id));
    const other = (await get('/v1/audit', globex.keys.admin)).body as AuditBody;
    expect(other.data.some((e) => trail.data.some((t) => t.id === e.id))).toBe(false);
    expect((await get('/v1/audit', acme.keys.viewer)).status).toBe(403);
    expect((await get('/v1/audit?limit=0', acme.keys.admin)).body).toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
    expect((await get('/v1/audit?cursor=bogus!', acme.keys.admin)).body).toMatchObject({ status: 400 });
  });
});
