// Tenant keys managed by the tenant's own admin (API.md "Tenant keys (admin)"), through two gateway
// processes, the agent, the tools service and the audit service on real NATS and MongoDB: keys are
// issued, listed (never a key or a hash; lastUsedAt once used, on any gateway) and revoked (401 at
// once on both gateways); editors and viewers may not manage keys, another tenant's key is 404,
// prototype names are no tenant, and a request without a valid key is 401 whatever its body.
import type { ProcessHandle } from '@keel/testkit';
import { eventually, freePort } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { Answer } from './support/http.js';
import { answerOf } from './support/http.js';
import { startAudit } from './support/platform.js';

interface KeyRow {
  id: string;
  role: string;
  name: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

interface AuditBody {
  data: Array<{ type: string; target: string; actor: { keyId: string; role: string }; requestId: string }>;
}

/** Names an object's prototype holds: ids like these must find nothing. */
const PROTOTYPE_IDS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'];

/** Every route that reads a body, with ids that route would accept. */
const BODY_ROUTES: ReadonlyArray<[string, string]> = [
  ['POST', '/v1/tenants'],
  ['POST', '/v1/tenants/tn_x/keys'],
  ['PUT', '/v1/tenants/tn_x/budget'],
  ['DELETE', '/v1/tenants/tn_x/keys/key_x'],
  ['POST', '/v1/keys'],
  ['DELETE', '/v1/keys/key_x'],
  ['PUT', '/v1/providers/openai'],
  ['PUT', '/v1/tools/refund'],
  ['PUT', '/v1/agents/support'],
  ['POST', '/v1/webhook-secret'],
  ['POST', '/v1/conversations'],
  ['POST', '/v1/conversations/conv_x/messages'],
  ['POST', '/v1/conversations/conv_x/approvals/appr_x'],
  ['POST', '/v1/conversations/conv_x/cancel'],
];

/** Bodies a parser refuses: not JSON, empty JSON, not UTF-8, not a JSON content type. */
const MALFORMED: ReadonlyArray<{ contentType: string; body: string | Uint8Array }> = [
  { contentType: 'application/json', body: '{"role": "admin"' },
  { contentType: 'application/json', body: '' },
  { contentType: 'application/json', body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
  { contentType: 'application/xml', body: '<role>admin</role>' },
  { contentType: 'application/x-www-form-urlencoded', body: 'role=admin' },
];

describe('tenant keys managed by the tenant admin (two gateways, agent, tools, audit as processes)', () => {
  let platform: GatewayPlatform;
  let audit: ProcessHandle;
  const acme = { id: '', admin: '', adminId: '' };
  const globex = { id: '', admin: '' };
  const issued = { editor: '', editorId: '', viewer: '', viewerId: '' };

  const on = (gateway: number) => platform.gateways[gateway]!.base;
  const call = async (
    method: string,
    path: string,
    key: string | undefined,
    body?: unknown,
    gateway = 0,
  ): Promise<Answer> =>
    answerOf(
      await fetch(`${on(gateway)}${path}`, {
        method,
        headers: {
          ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
  const raw = async (
    method: string,
    path: string,
    key: string | undefined,
    contentType: string,
    body: string | Uint8Array,
  ): Promise<Answer> =>
    answerOf(
      await fetch(`${on(0)}${path}`, {
        method,
        headers: {
          ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
          'content-type': contentType,
        },
        body,
      }),
    );
  const problem = (answer: Answer, status: number, code: string) => {
    expect(answer.status, `${answer.status} ${answer.text}`).toBe(status);
    expect(answer.body).toMatchObject({ status, code });
  };
  const keysOf = async (key: string, gateway = 0): Promise<KeyRow[]> => {
    const answer = await call('GET', '/v1/keys', key, undefined, gateway);
    expect(answer.status, answer.text).toBe(200);
    return (answer.body as { data: KeyRow[] }).data;
  };

  beforeAll(async () => {
    const auditPort = await freePort();
    platform = await startGatewayPlatform('tenantkeys', {
      gateways: ['gateway-a', 'gateway-b'],
      gatewayEnv: { AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
    });
    audit = await startAudit(platform.env, auditPort);
    const a = await platform.tenantWithKeys('Acme', ['admin'] as const);
    const g = await platform.tenantWithKeys('Globex', ['admin'] as const);
    Object.assign(acme, { id: a.id, admin: a.keys.admin });
    Object.assign(globex, { id: g.id, admin: g.keys.admin });
    acme.adminId = (await keysOf(acme.admin))[0]!.id;
  }, 180_000);

  afterAll(async () => {
    await audit?.kill('SIGTERM');
    await platform?.stop();
  });

  it('lets the admin issue editor and viewer keys, shown once; the editor key works for conversations', async () => {
    const editor = await call('POST', '/v1/keys', acme.admin, { role: 'editor', name: 'backend' });
    expect(editor.status, editor.text).toBe(201);
    expect(editor.body).toEqual({
      id: expect.stringMatching(/^key_/) as string,
      role: 'editor',
      key: expect.stringMatching(/^keel_/) as string,
    });
    const viewer = await call('POST', '/v1/keys', acme.admin, { role: 'viewer' });
    expect(viewer.status, viewer.text).toBe(201);
    Object.assign(issued, {
      editor: (editor.body as { key: string }).key,
      editorId: (editor.body as { id: string }).id,
      viewer: (viewer.body as { key: string }).key,
      viewerId: (viewer.body as { id: string }).id,
    });

    const agent = await call('PUT', '/v1/agents/plain', acme.admin, { model: 'openai:gpt-4o-mini' });
    expect(agent.status, agent.text).toBe(200);
    const created = await call('POST', '/v1/conversations', issued.editor, { agentId: 'plain' });
    expect(created.status, created.text).toBe(201);
    const id = (created.body as { id: string }).id;
    expect((await call('GET', `/v1/conversations/${id}`, issued.viewer)).status).toBe(200);
    problem(await call('POST', '/v1/conversations', issued.viewer, { agentId: 'plain' }), 403, 'forbidden');
  });

  it('refuses key management to editors, viewers and the operator on /v1/keys (403), and bad bodies (400)', async () => {
    for (const key of [issued.editor, issued.viewer, platform.operatorKey]) {
      problem(await call('GET', '/v1/keys', key), 403, 'forbidden');
      problem(await call('POST', '/v1/keys', key, { role: 'admin' }), 403, 'forbidden');
      problem(await call('DELETE', `/v1/keys/${acme.adminId}`, key), 403, 'forbidden');
    }
    for (const body of [
      { role: 'owner' },
      {},
      { role: 'viewer', scope: 'all' },
      { role: 'viewer', name: '' },
    ]) {
      problem(await call('POST', '/v1/keys', acme.admin, body), 400, 'invalid_request');
    }
    // Nothing was issued by the refused requests: the admin still works and the list holds three keys.
    expect((await keysOf(acme.admin)).map((k) => k.id)).toEqual([
      acme.adminId,
      issued.editorId,
      issued.viewerId,
    ]);
  });

  it('lists the keys without secrets, with lastUsedAt set once a key is used, on either gateway', async () => {
    const before = await keysOf(acme.admin);
    expect(before).toEqual([
      {
        id: acme.adminId,
        role: 'admin',
        name: null,
        createdAt: expect.any(String) as string,
        lastUsedAt: expect.any(String) as string,
      },
      {
        id: issued.editorId,
        role: 'editor',
        name: 'backend',
        createdAt: expect.any(String) as string,
        lastUsedAt: expect.any(String) as string,
      },
      {
        id: issued.viewerId,
        role: 'viewer',
        name: null,
        createdAt: expect.any(String) as string,
        lastUsedAt: expect.any(String) as string,
      },
    ]);
    const listed = JSON.stringify(before);
    for (const secret of [acme.admin, issued.editor, issued.viewer]) expect(listed).not.toContain(secret);
    expect(listed).not.toMatch(/keel_|[0-9a-f]{64}|keyHash|"key"/);

    // A key never used has none; used through the second gateway, the first one lists its use.
    const fresh = await call('POST', '/v1/keys', acme.admin, { role: 'viewer', name: 'fresh' });
    const freshId = (fresh.body as { id: string }).id;
    expect((await keysOf(acme.admin)).find((k) => k.id === freshId)?.lastUsedAt).toBeNull();
    const usedFrom = Date.now();
    expect(
      (await call('GET', '/v1/conversations', (fresh.body as { key: string }).key, undefined, 1)).status,
    ).toBe(200);
    const lastUsedAt = (await keysOf(acme.admin, 0)).find((k) => k.id === freshId)?.lastUsedAt;
    expect(Date.parse(lastUsedAt ?? '')).toBeGreaterThanOrEqual(usedFrom - 1000);
    expect((await call('GET', `/v1/tenants/${acme.id}/keys`, platform.operatorKey)).body).toEqual({
      data: await keysOf(acme.admin),
    });
  });

  it("answers 404 for another tenant's key id and for an unknown one, and changes nothing", async () => {
    problem(await call('DELETE', `/v1/keys/${issued.editorId}`, globex.admin), 404, 'not_found');
    problem(
      await call('DELETE', `/v1/keys/${issued.editorId}`, globex.admin, undefined, 1),
      404,
      'not_found',
    );
    problem(await call('DELETE', '/v1/keys/key_nope', acme.admin), 404, 'not_found');
    for (const id of PROTOTYPE_IDS) {
      problem(await call('DELETE', `/v1/keys/${encodeURIComponent(id)}`, acme.admin), 404, 'not_found');
    }
    expect((await keysOf(globex.admin)).map((k) => k.role)).toEqual(['admin']);
    expect((await call('GET', '/v1/conversations', issued.editor)).status).toBe(200);
  });

  it('revokes a key at once, on both gateways, and puts issue and revocation in the audit trail with the admin as actor', async () => {
    for (const gateway of [0, 1]) {
      expect((await call('GET', '/v1/conversations', issued.editor, undefined, gateway)).status).toBe(200);
    }
    const deleted = await call('DELETE', `/v1/keys/${issued.editorId}`, acme.admin);
    expect(deleted.status, deleted.text).toBe(204);
    for (const gateway of [1, 0]) {
      problem(
        await call('GET', '/v1/conversations', issued.editor, undefined, gateway),
        401,
        'unauthenticated',
      );
    }
    expect((await keysOf(acme.admin, 1)).map((k) => k.id)).not.toContain(issued.editorId);
    expect((await call('GET', '/v1/conversations', issued.viewer, undefined, 1)).status).toBe(200);

    const trail = await eventually(
      async () => {
        const answer = await call('GET', `/v1/audit?tenantId=${acme.id}`, platform.operatorKey);
        expect(answer.status, answer.text).toBe(200);
        const body = answer.body as AuditBody;
        expect(body.data.map((e) => e.type)).toContain('KeyRevoked');
        return body.data;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(trail.find((e) => e.type === 'KeyRevoked')).toMatchObject({
      target: `key:${issued.editorId}`,
      actor: { keyId: acme.adminId, role: 'admin' },
    });
    expect(trail.find((e) => e.type === 'KeyIssued' && e.target === `key:${issued.editorId}`)).toMatchObject({
      actor: { keyId: acme.adminId, role: 'admin' },
    });
    expect(JSON.stringify(trail)).not.toContain(issued.editor);
  });

  it('finds no tenant under a prototype name: 404, nothing issued, no id-less tenant listed', async () => {
    const tenantsBefore = await call('GET', '/v1/tenants', platform.operatorKey);
    expect(tenantsBefore.status).toBe(200);
    for (const id of PROTOTYPE_IDS) {
      const path = `/v1/tenants/${encodeURIComponent(id)}`;
      problem(await call('PUT', `${path}/budget`, platform.operatorKey, { monthlyUsd: 5 }), 404, 'not_found');
      problem(await call('POST', `${path}/keys`, platform.operatorKey, { role: 'admin' }), 404, 'not_found');
      problem(await call('GET', `${path}/keys`, platform.operatorKey), 404, 'not_found');
      problem(await call('DELETE', `${path}/keys/x`, platform.operatorKey), 404, 'not_found');
    }
    const tenantsAfter = await call('GET', '/v1/tenants', platform.operatorKey);
    expect(tenantsAfter.body).toEqual(tenantsBefore.body);
    const listed = (tenantsAfter.body as { data: Array<{ id?: unknown; name?: unknown }> }).data;
    expect(listed.every((t) => typeof t.id === 'string' && typeof t.name === 'string')).toBe(true);
  });

  it('answers a request without a valid key 401 on every body route, whatever the body', async () => {
    for (const [method, path] of BODY_ROUTES) {
      for (const { contentType, body } of MALFORMED) {
        for (const key of [undefined, 'keel_not-a-key', issued.editor]) {
          const answer = await raw(method, path, key, contentType, body);
          expect(answer.status, `${method} ${path} ${contentType} key=${String(key)}: ${answer.text}`).toBe(
            401,
          );
          expect(answer.body).toMatchObject({ code: 'unauthenticated' });
        }
      }
    }
    // With a valid key, the body is judged after the role: 403 for a viewer, 400 / 415 for the admin.
    problem(await raw('POST', '/v1/keys', issued.viewer, 'application/json', '{"role"'), 403, 'forbidden');
    const malformed = await raw('POST', '/v1/keys', acme.admin, 'application/json', '{"role"');
    problem(malformed, 400, 'invalid_request');
    expect((malformed.body as { detail: string }).detail).toMatch(/body/);
    expect((await raw('POST', '/v1/keys', acme.admin, 'application/xml', '<a/>')).status).toBe(415);
  });
});
