// The routes under the operator console (API.md "Who am I", "Operator console", "Usage and
// audit"): gateway, agent, tools, pricing and audit as separate processes on real NATS and
// FerretDB, the model played by the fake OpenAI server. Two tenants; a turn of one pauses for
// approval and shows up live in its tenant's feed and the operator's, in the pending approvals
// and the overview; the operator approves it acting for the tenant (X-Keel-Tenant) and is the
// actor in that tenant's audit trail; usage across tenants, by agent and as CSV; tenants with
// budget and cost this month; dead letters listed and replayed. Every role and another tenant's
// view checked; bad input is 400 problem+json and changes nothing.
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import type { RecordedEvent } from '@keel/core';
import { MongoDeadLetterStore, MongoEventStore } from '@keel/core/mongodb';
import { OperatorServiceService } from '@keel/proto/keel/operator/v1/operator';
import { GrpcClient } from '@keel/runtime';
import type { ProcessHandle, SseStream } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes, openSse } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from './support/grpc-client.js';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { Answer } from './support/http.js';
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
interface Approval {
  tenantId: string;
  conversationId: string;
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  message?: string;
  requestedAt: string;
}

const today = new Date().toISOString().slice(0, 10);
const range = `from=${today}&to=${today}`;

describe('operator console routes (gateway, agent, tools, pricing, audit as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  let store: MongoEventStore;
  const acme = { id: '', keys: { admin: '', editor: '', viewer: '' } };
  const globex = { id: '', keys: { admin: '', editor: '', viewer: '' } };
  const feeds: SseStream[] = [];

  const call = async (method: string, path: string, key: string, body?: unknown, headers = {}) =>
    answerOf(await platform.request(method, path, key, body, headers));
  const get = (path: string, key: string, headers: Record<string, string> = {}) =>
    call('GET', path, key, undefined, headers);
  const refused = (answer: Answer, status: number, code: string, field?: string) => {
    expect(answer.status, answer.text).toBe(status);
    expect(answer.contentType).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({ status, code });
    if (field) expect((answer.body as { detail: string }).detail).toMatch(new RegExp(`^${field}\\b`));
  };
  const feed = async (path: string, key: string, headers: Record<string, string> = {}) => {
    const stream = await openSse(`${platform.base}${path}`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', ...headers },
    });
    feeds.push(stream);
    return stream;
  };

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('operatorroutes', {
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      pricingFor: ['agent'],
    });
    audit = await startAudit(platform.env, auditPort);
    store = await MongoEventStore.connect(platform.env.MONGODB_URL!);
    Object.assign(acme, await platform.tenantWithKeys('Acme', ['admin', 'editor', 'viewer'] as const));
    Object.assign(globex, await platform.tenantWithKeys('Globex', ['admin', 'editor', 'viewer'] as const));
    await platform.configureSupportAgent(acme.keys.admin);
    expect(
      (await call('PUT', '/v1/agents/chat', globex.keys.admin, { model: 'openai:gpt-4o-mini' })).status,
    ).toBe(200);
    const provider = await call('PUT', '/v1/providers/openai', globex.keys.admin, {
      baseUrl: platform.fake.url,
      apiKey: 'sk-tenant-e2e',
    });
    expect(provider.status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    for (const stream of feeds) stream.close();
    await store?.close();
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('GET /v1/me names the key, its role and tenant; the operator has none unless it acts for one', async () => {
    for (const role of ['admin', 'editor', 'viewer'] as const) {
      const me = await get('/v1/me', acme.keys[role]);
      expect(me.status).toBe(200);
      expect(me.body).toEqual({ keyId: expect.any(String), role, tenant: { id: acme.id, name: 'Acme' } });
    }
    expect((await get('/v1/me', platform.operatorKey)).body).toEqual({
      keyId: 'operator',
      role: 'operator',
      tenant: null,
    });
    expect((await get('/v1/me', platform.operatorKey, { 'x-keel-tenant': globex.id })).body).toEqual({
      keyId: 'operator',
      role: 'operator',
      tenant: { id: globex.id, name: 'Globex' },
    });
    refused(await get('/v1/me', 'keel_not_a_key'), 401, 'unauthenticated');
    refused(await get('/v1/me', platform.operatorKey, { 'x-keel-tenant': 'tn_nope' }), 404, 'not_found');
    // A tenant key gains nothing from the header: another tenant (existing or not) is 403.
    refused(await get('/v1/me', acme.keys.admin, { 'x-keel-tenant': globex.id }), 403, 'forbidden');
    refused(await get('/v1/tools', acme.keys.admin, { 'x-keel-tenant': globex.id }), 403, 'forbidden');
    refused(await get('/v1/me', acme.keys.admin, { 'x-keel-tenant': 'tn_nope' }), 403, 'forbidden');
    expect((await get('/v1/me', acme.keys.admin, { 'x-keel-tenant': acme.id })).status).toBe(200);
  });

  let conversationId = '';
  let approval: Approval;
  let tenantFeed: SseStream;
  let operatorFeed: SseStream;
  let globexOnly: SseStream;

  it('a turn that pauses for approval shows live in the feeds, the pending approvals and the overview', async () => {
    tenantFeed = await feed('/v1/events', acme.keys.viewer);
    operatorFeed = await feed('/v1/operator/events', platform.operatorKey);
    globexOnly = await feed(`/v1/operator/events?tenantId=${globex.id}`, platform.operatorKey);
    for (const stream of [tenantFeed, operatorFeed, globexOnly]) {
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    }
    platform.fake.on(
      lastUserMessageIncludes('refund 20 on B-2'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'B-2', amount: 20 } }], {
        text: 'Let me refund that.',
      }),
      fakeReply.text('Refunded 20 on B-2.'),
    );
    const created = await call('POST', '/v1/conversations', acme.keys.editor, { agentId: 'support' });
    expect(created.status, created.text).toBe(201);
    conversationId = (created.body as { id: string }).id;
    const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, acme.keys.editor, {
      content: 'Please refund 20 on B-2',
    });
    expect(sent.status, sent.text).toBe(202);

    const isApproval = (frame: { event?: string }) => frame.event === 'approval.required';
    const seen = await tenantFeed.until(isApproval, 30_000);
    expect(seen[0]).toMatchObject({ event: 'turn.started', data: { conversationId, tenantId: acme.id } });
    expect(seen.at(-1)!.data).toMatchObject({
      conversationId,
      name: 'refund',
      args: { id: 'B-2', amount: 20 },
    });
    const ids = seen.map((frame) => Number(frame.id));
    expect(ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > ids[i - 1]!))).toBe(true);
    const operatorSeen = await operatorFeed.until(isApproval, 30_000);
    expect(operatorSeen.map((frame) => frame.id)).toEqual(seen.map((frame) => frame.id));
    expect(operatorSeen.every((frame) => (frame.data as { tenantId: string }).tenantId === acme.id)).toBe(
      true,
    );

    const pending = await get('/v1/approvals?status=pending', acme.keys.admin);
    expect(pending.status, pending.text).toBe(200);
    const rows = (pending.body as { data: Approval[] }).data;
    expect(rows).toEqual([
      {
        tenantId: acme.id,
        conversationId,
        approvalId: expect.any(String),
        toolCallId: expect.any(String),
        tool: 'refund',
        args: { id: 'B-2', amount: 20 },
        message: 'Let me refund that.',
        requestedAt: expect.any(String),
      },
    ]);
    approval = rows[0]!;
    expect((await get('/v1/approvals?status=pending', platform.operatorKey)).body).toEqual({ data: rows });
    expect((await get('/v1/approvals', globex.keys.admin)).body).toEqual({ data: [] });
    expect((await get('/v1/approvals', platform.operatorKey, { 'x-keel-tenant': globex.id })).body).toEqual({
      data: [],
    });
    refused(await get('/v1/approvals', acme.keys.editor), 403, 'forbidden');
    refused(await get('/v1/approvals', acme.keys.viewer), 403, 'forbidden');
    refused(await get('/v1/approvals?status=done', acme.keys.admin), 400, 'invalid_request', 'status');
    refused(await get('/v1/approvals?tenantId=tn_nope', platform.operatorKey), 404, 'not_found');

    // Keel addition: the turns running now, scoped like the approvals (waiting for one included).
    const turns = await get('/v1/turns?status=running', acme.keys.admin);
    expect(turns.status, turns.text).toBe(200);
    const running = (turns.body as { data: unknown[] }).data;
    expect(running).toEqual([
      {
        tenantId: acme.id,
        conversationId,
        turnId: expect.any(String),
        agentId: 'support',
        startedAt: expect.any(String),
      },
    ]);
    expect((await get('/v1/turns?status=running', platform.operatorKey)).body).toEqual({ data: running });
    expect((await get(`/v1/turns?tenantId=${acme.id}`, platform.operatorKey)).body).toEqual({
      data: running,
    });
    expect((await get('/v1/turns', globex.keys.admin)).body).toEqual({ data: [] });
    expect((await get('/v1/turns', platform.operatorKey, { 'x-keel-tenant': globex.id })).body).toEqual({
      data: [],
    });
    refused(await get('/v1/turns', acme.keys.editor), 403, 'forbidden');
    refused(await get('/v1/turns?status=done', acme.keys.admin), 400, 'invalid_request', 'status');
    refused(
      await get(`/v1/turns?tenantId=${globex.id}`, acme.keys.admin),
      400,
      'invalid_request',
      'tenantId',
    );
    refused(await get('/v1/turns?tenantId=tn_nope', platform.operatorKey), 404, 'not_found');

    const overview = await get('/v1/operator/overview', platform.operatorKey);
    expect(overview.status, overview.text).toBe(200);
    expect(overview.body).toMatchObject({
      tenants: 2,
      turnsRunning: 1,
      approvalsPending: 1,
      clientCallsPending: 0,
      deadLetters: 0,
    });
    refused(await get('/v1/operator/overview', acme.keys.admin), 403, 'forbidden');
    refused(
      await get('/v1/operator/overview?tz=Mars/Olympus', platform.operatorKey),
      400,
      'invalid_request',
      'tz',
    );
    refused(await get('/v1/operator/events', acme.keys.admin), 403, 'forbidden');
    refused(await get('/v1/events', platform.operatorKey), 403, 'forbidden');
    refused(await get('/v1/operator/events?tenantId=tn_nope', platform.operatorKey), 404, 'not_found');

    // The same over gRPC (keel.operator.v1.OperatorService), for services inside the platform.
    const grpc = new GrpcClient(platform.grpcAddress, { deadlineMs: 30_000 });
    try {
      const as = (key: string, extra: Record<string, string> = {}) => ({
        metadata: { authorization: `Bearer ${key}`, ...extra },
      });
      const list = (key: string, tenantId = '', extra: Record<string, string> = {}) =>
        grpc.unary(OperatorServiceService.listPendingApprovals, { tenantId }, as(key, extra));
      const expected = {
        data: rows.map(({ args, message, ...row }) => ({
          ...row,
          argsJson: JSON.stringify(args),
          message: message ?? '',
        })),
      };
      expect(await list(platform.operatorKey)).toEqual(expected);
      expect(await list(acme.keys.admin)).toEqual(expected);
      expect(await list(platform.operatorKey, '', { 'x-keel-tenant': acme.id })).toEqual(expected);
      expect(await list(globex.keys.admin)).toEqual({ data: [] });
      expect(await list(platform.operatorKey, globex.id)).toEqual({ data: [] });
      expect(await codeOf(list(acme.keys.editor))).toBe(status.PERMISSION_DENIED);
      expect(await codeOf(list(platform.operatorKey, 'tn_nope'))).toBe(status.NOT_FOUND);
      expect(await codeOf(list(acme.keys.admin, globex.id))).toBe(status.INVALID_ARGUMENT);
      const overviewOf = (key: string, tz = '') =>
        grpc.unary(OperatorServiceService.getOverview, { tz }, as(key));
      expect(await overviewOf(platform.operatorKey)).toMatchObject({
        tenants: 2,
        turnsRunning: 1,
        approvalsPending: 1,
        clientCallsPending: 0,
      });
      expect(await codeOf(overviewOf(acme.keys.admin))).toBe(status.PERMISSION_DENIED);
      expect(await codeOf(overviewOf(platform.operatorKey, 'Mars/Olympus'))).toBe(status.INVALID_ARGUMENT);
      expect(await codeOf(overviewOf('keel_not_a_key'))).toBe(status.UNAUTHENTICATED);
    } finally {
      grpc.close();
    }
  });

  it('the operator acting for the tenant approves; the turn completes; the audit trail names the operator', async () => {
    // Acting for Globex, Acme's conversation is not found.
    refused(
      await get(`/v1/conversations/${conversationId}`, platform.operatorKey, { 'x-keel-tenant': globex.id }),
      404,
      'not_found',
    );
    // Without the header the operator acts on no tenant's conversations.
    refused(
      await call(
        'POST',
        `/v1/conversations/${conversationId}/approvals/${approval.approvalId}`,
        platform.operatorKey,
        {
          decision: 'approve',
        },
      ),
      403,
      'forbidden',
    );
    const decided = await call(
      'POST',
      `/v1/conversations/${conversationId}/approvals/${approval.approvalId}`,
      platform.operatorKey,
      { decision: 'approve' },
      { 'x-keel-tenant': acme.id, 'x-request-id': 'req-operator-approves' },
    );
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body).toEqual({ approvalId: approval.approvalId, decision: 'approve' });
    const frames = await tenantFeed.until((frame) => frame.event === 'turn.completed', 30_000);
    const decidedFrame = frames.find((frame) => frame.event === 'approval.decided')!;
    expect(decidedFrame.data).toMatchObject({ approvalId: approval.approvalId, decision: 'approve' });

    // Resumed from the approval.required frame: what followed, no gap, no duplicate.
    const required = frames.find((frame) => frame.event === 'approval.required')!;
    const resumed = await feed('/v1/events', acme.keys.viewer, { 'last-event-id': required.id! });
    const after = await resumed.until((frame) => frame.event === 'turn.completed', 30_000);
    const following = frames.slice(frames.indexOf(required) + 1);
    expect(after.map((frame) => [frame.id, frame.event])).toEqual(
      following.map((frame) => [frame.id, frame.event]),
    );
    // Nothing of Acme's reached the feed narrowed to Globex.
    expect(globexOnly.events()).toEqual([]);

    expect((await get('/v1/approvals', acme.keys.admin)).body).toEqual({ data: [] });
    expect((await get('/v1/operator/overview', platform.operatorKey)).body).toMatchObject({
      turnsRunning: 0,
      approvalsPending: 0,
    });
    await eventually(
      async () => {
        const trail = await get('/v1/audit?type=ApprovalDecided', acme.keys.admin);
        expect((trail.body as { data: unknown[] }).data).toEqual([
          expect.objectContaining({
            type: 'ApprovalDecided',
            actor: { keyId: 'operator', role: 'admin', userId: 'operator' },
            requestId: 'req-operator-approves',
          }),
        ]);
      },
      { timeoutMs: 20_000 },
    );
  });

  it('usage across tenants by tenant, by agent and as CSV with the same totals; bad queries are 400', async () => {
    platform.fake.on(
      lastUserMessageIncludes('hello globex'),
      fakeReply.text('hi', { usage: { promptTokens: 7, completionTokens: 3 } }),
    );
    const created = await call('POST', '/v1/conversations', globex.keys.editor, { agentId: 'chat' });
    const id = (created.body as { id: string }).id;
    expect(
      (
        await call('POST', `/v1/conversations/${id}/messages`, globex.keys.editor, {
          content: 'hello globex',
        })
      ).status,
    ).toBe(202);

    let byTenant: UsageBody = {
      totals: { promptTokens: 0, completionTokens: 0, costUsd: 0, turns: 0 },
      rows: [],
    };
    await eventually(
      async () => {
        const answer = await get(`/v1/usage?${range}&groupBy=tenant`, platform.operatorKey);
        expect(answer.status, answer.text).toBe(200);
        byTenant = answer.body as UsageBody;
        expect(byTenant.rows.map((row) => row.key).sort()).toEqual([acme.id, globex.id].sort());
        expect(byTenant.totals.turns).toBe(2);
      },
      { timeoutMs: 30_000 },
    );
    const acmeRow = byTenant.rows.find((row) => row.key === acme.id)!;
    expect(acmeRow.costUsd).toBeGreaterThan(0);
    // One tenant's own usage is its row of the operator's.
    const own = (await get(`/v1/usage?${range}`, acme.keys.viewer)).body as UsageBody;
    expect(own.totals).toEqual({
      promptTokens: acmeRow.promptTokens,
      completionTokens: acmeRow.completionTokens,
      costUsd: acmeRow.costUsd,
      turns: acmeRow.turns,
    });
    const byAgent = (await get(`/v1/usage?${range}&groupBy=agent`, acme.keys.viewer)).body as UsageBody;
    expect(byAgent.rows.map((row) => row.key)).toEqual(['support']);
    expect(byAgent.totals).toEqual(own.totals);
    const acting = (
      await get(`/v1/usage?${range}&groupBy=agent`, platform.operatorKey, { 'x-keel-tenant': acme.id })
    ).body as UsageBody;
    expect(acting).toEqual(byAgent);

    for (const [query, key] of [
      [`${range}&groupBy=tenant`, platform.operatorKey],
      [`${range}&groupBy=agent`, acme.keys.viewer],
      [`${range}&groupBy=model`, platform.operatorKey],
    ] as const) {
      const json = (await get(`/v1/usage?${query}`, key)).body as UsageBody;
      const csv = await get(`/v1/usage?${query}&format=csv`, key);
      expect(csv.status).toBe(200);
      expect(csv.contentType).toMatch(/^text\/csv/);
      const [header, ...lines] = csv.text.trim().split('\r\n');
      expect(header).toBe('key,promptTokens,completionTokens,costUsd,turns');
      const rows = lines.map((line) => {
        const [k, p, c, cost, turns] = line.split(',');
        return {
          key: k!,
          promptTokens: Number(p),
          completionTokens: Number(c),
          costUsd: Number(cost),
          turns: Number(turns),
        };
      });
      // The CSV has the API's five columns; rows by agent carry feedbackUp/feedbackDown in JSON only.
      expect(rows).toEqual(
        json.rows.map(({ key, promptTokens, completionTokens, costUsd, turns }) => ({
          key,
          promptTokens,
          completionTokens,
          costUsd,
          turns,
        })),
      );
      const sum = (pick: (row: Figures) => number) => rows.reduce((total, row) => total + pick(row), 0);
      expect(sum((row) => row.promptTokens)).toBe(json.totals.promptTokens);
      expect(sum((row) => row.completionTokens)).toBe(json.totals.completionTokens);
      expect(sum((row) => row.turns)).toBe(json.totals.turns);
      expect(sum((row) => row.costUsd)).toBeCloseTo(json.totals.costUsd, 9);
    }

    refused(
      await get(`/v1/usage?${range}&groupBy=tenant`, acme.keys.viewer),
      400,
      'invalid_request',
      'groupBy',
    );
    refused(
      await get(`/v1/usage?${range}&groupBy=week`, platform.operatorKey),
      400,
      'invalid_request',
      'groupBy',
    );
    refused(
      await get(`/v1/usage?${range}&tz=Mars/Olympus`, platform.operatorKey),
      400,
      'invalid_request',
      'tz',
    );
    refused(await get(`/v1/usage?${range}&format=xml`, acme.keys.viewer), 400, 'invalid_request', 'format');
    refused(await get(`/v1/usage?${range}&tenantId=tn_nope`, platform.operatorKey), 404, 'not_found');
  });

  it('tenants carry their budget and cost this month; a bad budget or name is 400 and changes nothing', async () => {
    const list = async () =>
      (
        (await get('/v1/tenants', platform.operatorKey)).body as {
          data: Array<{ id: string; name: string; monthlyUsd: number | null; costMonthUsd: number | null }>;
        }
      ).data;
    const before = await list();
    expect(before.map((tenant) => tenant.id).sort()).toEqual([acme.id, globex.id].sort());
    const acmeRow = before.find((tenant) => tenant.id === acme.id)!;
    expect(acmeRow.monthlyUsd).toBeNull();
    expect(acmeRow.costMonthUsd).toBeGreaterThan(0);
    const overview = (await get('/v1/operator/overview?tz=Pacific/Kiritimati', platform.operatorKey))
      .body as Record<string, number>;
    expect(overview.costMonthUsd).toBeGreaterThan(0);

    expect(
      (await call('PUT', `/v1/tenants/${acme.id}/budget`, platform.operatorKey, { monthlyUsd: 50 })).status,
    ).toBe(200);
    refused(
      await call('PUT', `/v1/tenants/${acme.id}/budget`, platform.operatorKey, { monthlyUsd: -5 }),
      400,
      'invalid_request',
      'monthlyUsd',
    );
    refused(
      await call('POST', '/v1/tenants', platform.operatorKey, { name: '' }),
      400,
      'invalid_request',
      'name',
    );
    refused(
      await call('POST', '/v1/tenants', platform.operatorKey, { name: '   ' }),
      400,
      'invalid_request',
      'name',
    );
    const after = await list();
    expect(after).toHaveLength(2);
    expect(after.find((tenant) => tenant.id === acme.id)!.monthlyUsd).toBe(50);
    refused(await get('/v1/tenants', acme.keys.admin), 403, 'forbidden');
  });

  it('dead letters: listed per tenant, replayed by the operator only (202), then gone', async () => {
    const letters = new MongoDeadLetterStore(store.db);
    const event: RecordedEvent = {
      eventId: randomUUID(),
      type: 'PhaseChanged',
      data: { turnId: 't', from: 'a', to: 'b', toolCallId: 'x', at: new Date().toISOString() },
      metadata: { correlationId: 'dead-letter-test' },
      tenantId: acme.id,
      streamName: `conversation-${conversationId}`,
      version: 999,
      globalPosition: 999_999,
      commitId: randomUUID(),
      recordedAt: new Date().toISOString(),
    };
    const id = `dl-${randomUUID()}`;
    await letters.record({
      id,
      consumer: 'agent-conversation-index',
      tenantId: acme.id,
      event,
      error: 'boom',
      deliveryCount: 5,
      deadAt: new Date().toISOString(),
    });
    const row = {
      id,
      consumer: 'agent-conversation-index',
      tenantId: acme.id,
      eventType: 'PhaseChanged',
      error: 'boom',
      attempts: 5,
      failedAt: expect.any(String),
    };
    expect((await get('/v1/dead-letters', platform.operatorKey)).body).toEqual({ data: [row] });
    expect((await get('/v1/dead-letters', acme.keys.admin)).body).toEqual({ data: [row] });
    expect((await get('/v1/dead-letters', globex.keys.admin)).body).toEqual({ data: [] });
    expect((await get(`/v1/dead-letters?tenantId=${globex.id}`, platform.operatorKey)).body).toEqual({
      data: [],
    });
    expect((await get('/v1/operator/overview', platform.operatorKey)).body).toMatchObject({ deadLetters: 1 });
    refused(await get('/v1/dead-letters', acme.keys.viewer), 403, 'forbidden');
    refused(await get('/v1/dead-letters?limit=0', platform.operatorKey), 400, 'invalid_request', 'limit');
    refused(await call('POST', `/v1/dead-letters/${id}/replay`, acme.keys.admin), 403, 'forbidden');
    refused(await call('POST', '/v1/dead-letters/dl-nope/replay', platform.operatorKey), 404, 'not_found');

    const replayed = await call('POST', `/v1/dead-letters/${id}/replay`, platform.operatorKey);
    expect(replayed.status, replayed.text).toBe(202);
    await eventually(
      async () => expect((await get('/v1/dead-letters', platform.operatorKey)).body).toEqual({ data: [] }),
      { timeoutMs: 20_000 },
    );
    refused(await call('POST', `/v1/dead-letters/${id}/replay`, platform.operatorKey), 409, 'conflict');
  });
});
