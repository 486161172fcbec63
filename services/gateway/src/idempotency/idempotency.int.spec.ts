// Idempotency-Key across two gateway processes sharing MongoDB and NATS, on the operator routes
// (no agent needed): a retry on the other instance gets the first response without a second
// write, a different body or a retry while the first runs is a 409, a rejected request frees
// its key, and a response holding a secret shown once is never stored nor shown again.
import type { ProcessHandle } from '@keel/testkit';
import { freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const OPERATOR_KEY = `op_${uniqueName('idem')}`;
const gateways: ProcessHandle[] = [];
const bases: string[] = [];

const post = async (base: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    body: (await response.json()) as Record<string, unknown>,
  };
};

const tenants = async (name: string) => {
  const response = await fetch(`${bases[0]}/v1/tenants`, {
    headers: { authorization: `Bearer ${OPERATOR_KEY}` },
  });
  const { data } = (await response.json()) as { data: Array<{ name: string }> };
  return data.filter((t) => t.name === name);
};

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const env = {
    MONGODB_URL: mongoUrlFor(uniqueName('idempotency_gw'), mongoUrl),
    NATS_URL: natsUrl,
    HOST: '127.0.0.1',
    KEEL_OPERATOR_KEY: OPERATOR_KEY,
    KEEL_NATS_STREAM: uniqueName('IDEM'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('idem')}`,
    LOG_LEVEL: 'info',
  };
  for (const name of ['gateway-a', 'gateway-b']) {
    const port = await freePort();
    bases.push(`http://127.0.0.1:${port}`);
    gateways.push(
      await startProcess({
        name,
        entry: 'services/gateway/src/main.ts',
        env: { ...env, PORT: String(port), GRPC_PORT: String(await freePort()) },
        readyLine: /"msg":"ready"/,
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.kill('SIGTERM', 10_000)));
});

describe('Idempotency-Key (two gateway processes on MongoDB)', () => {
  it('answers a retry on either instance with the first response, and writes once', async () => {
    const name = uniqueName('Acme');
    const first = await post(bases[0]!, '/v1/tenants', { name }, { 'idempotency-key': 'create-1' });
    expect(first).toMatchObject({ status: 201, replayed: null, body: { name } });
    const retry = await post(bases[1]!, '/v1/tenants', { name }, { 'idempotency-key': 'create-1' });
    expect(retry).toEqual({ ...first, replayed: 'true' });
    // The same body in another key order is the same request.
    const reordered = await fetch(`${bases[0]}/v1/tenants`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${OPERATOR_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': 'create-1',
      },
      body: `{ "name": ${JSON.stringify(name)} }`,
    });
    expect(await reordered.json()).toEqual(first.body);
    expect(await tenants(name)).toHaveLength(1);
    // Without a key, the same request is new work.
    expect((await post(bases[0]!, '/v1/tenants', { name })).status).toBe(201);
    expect(await tenants(name)).toHaveLength(2);
  });

  it('refuses the same key with another body (409 naming Idempotency-Key) and a malformed key (400)', async () => {
    const name = uniqueName('Globex');
    expect((await post(bases[0]!, '/v1/tenants', { name }, { 'idempotency-key': 'create-2' })).status).toBe(
      201,
    );
    const other = await post(
      bases[1]!,
      '/v1/tenants',
      { name: `${name}-x` },
      { 'idempotency-key': 'create-2' },
    );
    expect(other).toMatchObject({
      status: 409,
      body: { code: 'conflict', detail: expect.stringContaining('Idempotency-Key') },
    });
    const malformed = await post(bases[0]!, '/v1/tenants', { name }, { 'idempotency-key': 'x'.repeat(256) });
    expect(malformed).toMatchObject({
      status: 400,
      body: { code: 'invalid_request', detail: expect.stringContaining('Idempotency-Key') },
    });
    expect(await tenants(`${name}-x`)).toHaveLength(0);
  });

  it('gives concurrent requests with one key to one of them: the others get its response or 409 in progress', async () => {
    const name = uniqueName('Initech');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post(bases[i % 2]!, '/v1/tenants', { name }, { 'idempotency-key': 'race-1' }),
      ),
    );
    const created = answers.filter((a) => a.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((a) => a.body.id)).size).toBe(1);
    for (const answer of answers.filter((a) => a.status !== 201)) {
      expect(answer).toMatchObject({
        status: 409,
        body: { code: 'conflict', detail: expect.stringContaining('in progress') },
      });
    }
    expect(await tenants(name)).toHaveLength(1);
  });

  it('frees the key of a rejected request: the corrected retry does the work', async () => {
    const bad = await post(bases[0]!, '/v1/tenants', { name: 7 }, { 'idempotency-key': 'fix-1' });
    expect(bad.status).toBe(400);
    const name = uniqueName('Fixed');
    const fixed = await post(bases[1]!, '/v1/tenants', { name }, { 'idempotency-key': 'fix-1' });
    expect(fixed).toMatchObject({ status: 201, replayed: null, body: { name } });
  });

  it('never stores nor repeats a secret shown once (an issued key): its retry is a 409 without the key', async () => {
    const tenant = await post(bases[0]!, '/v1/tenants', { name: uniqueName('Keys') });
    const path = `/v1/tenants/${String(tenant.body.id)}/keys`;
    const issued = await post(bases[0]!, path, { role: 'viewer' }, { 'idempotency-key': 'key-1' });
    expect(issued).toMatchObject({ status: 201, body: { role: 'viewer', key: expect.any(String) } });
    const retry = await post(bases[1]!, path, { role: 'viewer' }, { 'idempotency-key': 'key-1' });
    expect(retry).toMatchObject({
      status: 409,
      body: { code: 'conflict', detail: expect.stringContaining('shown once') },
    });
    expect(JSON.stringify(retry.body)).not.toContain(String(issued.body.key));
  });
});
