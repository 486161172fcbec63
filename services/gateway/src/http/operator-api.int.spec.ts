// The operator API on real MongoDB and NATS, the gateway run as its own process (`npm run
// start:gateway`), called over HTTP as a client would.
import type { ProcessHandle } from '@keel/testkit';
import { freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const OPERATOR_KEY = `op_${uniqueName('operator')}`;
let env: Record<string, string> = {};
let gateway: ProcessHandle;
let base = '';

const start = () =>
  startProcess({ name: 'gateway', entry: 'services/gateway/src/main.ts', env, readyLine: /"msg":"ready"/ });

const call = (
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Response> => {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
};

const operator = (method: string, path: string, body?: unknown) =>
  call(method, path, { key: OPERATOR_KEY, ...(body !== undefined ? { body } : {}) });

/** Asserts a problem+json answer and returns its body. */
const expectProblem = async (
  response: Response,
  status: number,
  code: string,
): Promise<{ detail: string }> => {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await response.json()) as Record<string, unknown>;
  expect(problem).toMatchObject({ status, code });
  expect(typeof problem.type).toBe('string');
  expect(typeof problem.title).toBe('string');
  expect(typeof problem.detail).toBe('string');
  return problem as { detail: string };
};

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const port = await freePort();
  env = {
    MONGODB_URL: mongoUrlFor(uniqueName('operator_api'), mongoUrl),
    NATS_URL: natsUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    GRPC_PORT: String(await freePort()),
    KEEL_OPERATOR_KEY: OPERATOR_KEY,
    KEEL_NATS_STREAM: uniqueName('OPAPI'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('opapi')}`,
    LOG_LEVEL: 'info',
  };
  base = `http://127.0.0.1:${port}`;
  gateway = await start();
});

afterAll(async () => {
  await gateway?.kill('SIGTERM', 10_000);
});

describe('operator API (gateway process on MongoDB and NATS)', () => {
  let tenantId = '';
  let adminKey = '';
  let adminKeyId = '';
  let viewerKey = '';

  it('creates and lists tenants, echoing X-Request-Id', async () => {
    const created = await call('POST', '/v1/tenants', {
      key: OPERATOR_KEY,
      body: { name: 'Acme' },
      headers: { 'x-request-id': 'req-create-1' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('x-request-id')).toBe('req-create-1');
    const tenant = (await created.json()) as { id: string; name: string; createdAt: string };
    expect(tenant).toEqual({ id: expect.any(String), name: 'Acme', createdAt: expect.any(String) });
    expect(Number.isNaN(Date.parse(tenant.createdAt))).toBe(false);
    tenantId = tenant.id;

    const listed = await operator('GET', '/v1/tenants');
    expect(listed.status).toBe(200);
    expect(listed.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    // No budget yet; no audit service runs beside this gateway, so its cost is unknown (null).
    expect(((await listed.json()) as { data: unknown[] }).data).toEqual([
      { ...tenant, monthlyUsd: null, costMonthUsd: null },
    ]);
  });

  it('issues keys shown once (32+ random bytes), 404 for an unknown tenant', async () => {
    const issued = await operator('POST', `/v1/tenants/${tenantId}/keys`, { role: 'admin', name: 'ci' });
    expect(issued.status).toBe(201);
    const key = (await issued.json()) as { id: string; role: string; key: string };
    expect(key).toEqual({ id: expect.any(String), role: 'admin', key: expect.stringMatching(/^keel_/) });
    expect(Buffer.from(key.key.slice('keel_'.length), 'base64url').length).toBeGreaterThanOrEqual(32);
    adminKey = key.key;
    adminKeyId = key.id;
    const viewer = await operator('POST', `/v1/tenants/${tenantId}/keys`, { role: 'viewer' });
    viewerKey = ((await viewer.json()) as { key: string }).key;
    expect(viewerKey).not.toBe(adminKey);
    // Shown once: no listing returns it.
    expect(JSON.stringify(await (await operator('GET', '/v1/tenants')).json())).not.toContain(adminKey);

    await expectProblem(
      await operator('POST', '/v1/tenants/tn_nope/keys', { role: 'admin' }),
      404,
      'not_found',
    );
    const badRole = await expectProblem(
      await operator('POST', `/v1/tenants/${tenantId}/keys`, { role: 'owner' }),
      400,
      'invalid_request',
    );
    expect(badRole.detail).toMatch(/role/);
  });

  it('refuses a tenant key on operator routes (403) and no key or a garbage key (401), as problem+json', async () => {
    await expectProblem(await call('GET', '/v1/tenants', { key: adminKey }), 403, 'forbidden');
    await expectProblem(
      await call('POST', '/v1/tenants', { key: adminKey, body: { name: 'x' } }),
      403,
      'forbidden',
    );
    const anonymous = await call('GET', '/v1/tenants', { headers: { 'x-request-id': 'req-anon' } });
    expect(anonymous.headers.get('x-request-id')).toBe('req-anon');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    await expectProblem(anonymous, 401, 'unauthenticated');
    await expectProblem(await call('GET', '/v1/tenants', { key: 'keel_garbage' }), 401, 'unauthenticated');
    await expectProblem(
      await call('GET', '/v1/tenants', { key: `${OPERATOR_KEY}x` }),
      401,
      'unauthenticated',
    );
  });

  it('answers malformed JSON, unknown fields and bad values with 400 naming them, writing nothing', async () => {
    const malformed = await call('POST', '/v1/tenants', { key: OPERATOR_KEY, raw: '{"name": "Acme"' });
    expect((await expectProblem(malformed, 400, 'invalid_request')).detail).toMatch(/body/);
    const unknown = await operator('POST', '/v1/tenants', { name: 'Acme', plan: 'gold' });
    expect((await expectProblem(unknown, 400, 'invalid_request')).detail).toMatch(/plan/);
    const long = await operator('POST', '/v1/tenants', { name: 'x'.repeat(101) });
    expect((await expectProblem(long, 400, 'invalid_request')).detail).toMatch(/name/);
    const budget = await operator('PUT', `/v1/tenants/${tenantId}/budget`, { monthlyUsd: -5 });
    expect((await expectProblem(budget, 400, 'invalid_request')).detail).toMatch(/monthlyUsd/);
    const tenants = ((await (await operator('GET', '/v1/tenants')).json()) as { data: unknown[] }).data;
    expect(tenants).toHaveLength(1);
    expect(tenants[0]).toMatchObject({ monthlyUsd: null });
  });

  it('answers a body over 1 MiB with 413 and an unknown route with 404, as problem+json', async () => {
    const big = await call('POST', '/v1/tenants', {
      key: OPERATOR_KEY,
      raw: JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }),
    });
    await expectProblem(big, 413, 'payload_too_large');
    await expectProblem(await operator('GET', '/v1/nothing-here'), 404, 'not_found');
  });

  it('sets a budget', async () => {
    const set = await operator('PUT', `/v1/tenants/${tenantId}/budget`, { monthlyUsd: 25 });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ id: tenantId, monthlyUsd: 25 });
  });

  it('revokes a key: its very next request is 401', async () => {
    await expectProblem(await call('GET', '/v1/tenants', { key: adminKey }), 403, 'forbidden');
    const revoked = await operator('DELETE', `/v1/tenants/${tenantId}/keys/${adminKeyId}`);
    expect(revoked.status).toBe(204);
    await expectProblem(await call('GET', '/v1/tenants', { key: adminKey }), 401, 'unauthenticated');
    await expectProblem(await operator('DELETE', `/v1/tenants/${tenantId}/keys/key_nope`), 404, 'not_found');
    // The other key of the tenant still authenticates.
    await expectProblem(await call('GET', '/v1/tenants', { key: viewerKey }), 403, 'forbidden');
  });

  it('keeps tenants, keys, revocations and budgets across a restart (rebuilt from the log)', async () => {
    expect(await gateway.kill('SIGTERM', 10_000)).toEqual({ code: 0, signal: null });
    gateway = await start();
    const tenants = ((await (await operator('GET', '/v1/tenants')).json()) as { data: unknown[] }).data;
    expect(tenants).toEqual([
      { id: tenantId, name: 'Acme', createdAt: expect.any(String), monthlyUsd: 25, costMonthUsd: null },
    ]);
    await expectProblem(await call('GET', '/v1/tenants', { key: viewerKey }), 403, 'forbidden');
    await expectProblem(await call('GET', '/v1/tenants', { key: adminKey }), 401, 'unauthenticated');
  });
});
