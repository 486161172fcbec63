// Rate limits per API key, held across gateway instances: two gateway processes on the same NATS
// (counters in a JetStream KV bucket) and an agent, with a limit of 10 requests per minute.
import { status } from '@grpc/grpc-js';
import type { ProcessHandle } from '@keel/testkit';
import { freePort, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureOf, pricingClient } from './support/grpc-client.js';
import type { Answer } from './support/http.js';
import { answerOf, gatewayRequest } from './support/http.js';
import { platformEnv, startAgent, startGateway } from './support/platform.js';

const OPERATOR_KEY = `op_${uniqueName('rl')}`;
const LIMIT = 10;
/** All of a tenant's keys together. */
const TENANT_LIMIT = 15;

const call = async (
  base: string,
  path: string,
  key?: string,
  method = 'GET',
  body?: unknown,
): Promise<Answer> => answerOf(await gatewayRequest(base, method, path, key, body));

/** Calls the gateway's PricingService.ListModels with `key`; resolves the call's status. */
const listModels = async (address: string, key: string) => {
  const client = pricingClient(address);
  const failure = await failureOf(client.unary('listModels', key, {}));
  client.close();
  return failure ? { code: failure.code, metadata: failure.metadata } : { code: status.OK };
};

/** Waits for a fresh minute when the current one has too little left for a burst to fit in it. */
const inOneWindow = async (neededMs: number) => {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
};

describe('rate limits per key across two gateway processes', () => {
  const env = platformEnv('rl', {
    KEEL_RATE_LIMIT_RPM: String(LIMIT),
    KEEL_TENANT_RATE_LIMIT_RPM: String(TENANT_LIMIT),
    KEEL_RATE_LIMIT_BUCKET: uniqueName('rl_bucket'),
  });
  let agent: ProcessHandle;
  let gateways: ProcessHandle[] = [];
  const bases: string[] = [];
  const grpcAddresses: string[] = [];
  let adminKey = '';
  /** The editor keys the second case issues. */
  const editorKeys: string[] = [];

  beforeAll(async () => {
    const agentPort = await freePort();
    agent = await startAgent(env, agentPort, 'http://127.0.0.1:9/v1');
    gateways = await Promise.all(
      ['gateway-a', 'gateway-b'].map(async (name) => {
        const port = await freePort();
        const grpcPort = await freePort();
        bases.push(`http://127.0.0.1:${port}`);
        grpcAddresses.push(`127.0.0.1:${grpcPort}`);
        return startGateway(env, { port, grpcPort, agentPort }, OPERATOR_KEY, { name });
      }),
    );
  }, 180_000);

  afterAll(async () => {
    await Promise.all([...gateways.map((gateway) => gateway.kill('SIGTERM')), agent?.kill('SIGTERM')]);
  });

  it('a key over its limit, spread over both gateways, gets 429 rate_limited with Retry-After (gRPC: RESOURCE_EXHAUSTED); another key and the probes are not limited', async () => {
    await inOneWindow(20_000);
    const [a, b] = bases as [string, string];
    // Two of the operator's ten: a tenant and its admin key.
    const tenant = await call(a, '/v1/tenants', OPERATOR_KEY, 'POST', { name: 'Acme' });
    expect(tenant.status).toBe(201);
    const issued = await call(
      b,
      `/v1/tenants/${(tenant.body as { id: string }).id}/keys`,
      OPERATOR_KEY,
      'POST',
      {
        role: 'admin',
      },
    );
    expect(issued.status).toBe(201);
    adminKey = (issued.body as { key: string }).key;

    const remaining: string[] = [];
    for (let i = 2; i < LIMIT; i++) {
      const answer = await call(i % 2 === 0 ? a : b, '/v1/tenants', OPERATOR_KEY);
      expect(answer.status).toBe(200);
      remaining.push(answer.headers.get('ratelimit-remaining') ?? '');
    }
    expect(remaining).toEqual(['7', '6', '5', '4', '3', '2', '1', '0']);

    for (const base of [a, b]) {
      const refused = await call(base, '/v1/tenants', OPERATOR_KEY);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }

    // The same key over gRPC, on either gateway: RESOURCE_EXHAUSTED with a retry-after trailer.
    for (const address of grpcAddresses) {
      const refused = await listModels(address, OPERATOR_KEY);
      expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(Number(refused.metadata?.get('retry-after')[0])).toBeGreaterThanOrEqual(1);
    }

    // The tenant's key has its own count; the probes are never counted.
    const agents = await call(b, '/v1/agents', adminKey);
    expect(agents.status, JSON.stringify(agents.body)).toBe(200);
    for (const base of [a, b]) {
      for (const probe of ['/healthz', '/readyz', '/metrics']) {
        expect((await call(base, probe, OPERATOR_KEY)).status).toBe(200);
      }
    }
  });

  it("a tenant's keys share its limit: keys an admin issues cannot multiply the tenant's rate", async () => {
    expect(adminKey, 'the first case issues the admin key').not.toBe('');
    await inOneWindow(20_000);
    const [a, b] = bases as [string, string];
    const editors: string[] = [];
    for (const base of [a, b]) {
      const issued = await call(base, '/v1/keys', adminKey, 'POST', { role: 'editor' });
      expect(issued.status, JSON.stringify(issued.body)).toBe(201);
      editors.push((issued.body as { key: string }).key);
    }

    // Two editors, alternating over both gateways: each stays far below its own limit of 10.
    let admitted = 0;
    let refused: Answer | undefined;
    for (let i = 0; i < TENANT_LIMIT && !refused; i++) {
      const answer = await call(i % 2 === 0 ? a : b, '/v1/conversations', editors[i % 2]);
      if (answer.status === 429) refused = answer;
      else {
        expect(answer.status).toBe(200);
        admitted++;
      }
    }

    // The admin's three requests of this window (one, if the first case ran in an earlier one, is
    // not counted) and the editors' admitted ones add up to the tenant's limit.
    expect(refused?.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect((refused?.body as { detail: string }).detail).toMatch(/for this tenant/);
    expect(admitted).toBeGreaterThanOrEqual(TENANT_LIMIT - 3);
    expect(admitted).toBeLessThanOrEqual(TENANT_LIMIT - 2);
    editorKeys.push(...editors);
  });

  it('a streamed send over the limit is 429 before any frame: the agent never sees it (the route awaits the limit before submitting)', async () => {
    expect(editorKeys, 'the second case issues the editor keys').toHaveLength(2);
    // No such conversation: a send the agent sees is 404; only one refused before it is 429.
    const conversationId = '0192f1c2-0000-7000-8000-00000000abcd';
    const answers: Answer[] = [];
    for (let i = 0; i <= TENANT_LIMIT && answers.at(-1)?.status !== 429; i++) {
      const response = await gatewayRequest(
        bases[i % 2]!,
        'POST',
        `/v1/conversations/${conversationId}/messages`,
        editorKeys[0],
        { content: 'hello' },
        { accept: 'text/event-stream' },
      );
      answers.push(await answerOf(response));
    }
    const refused = answers.at(-1)!;
    expect(answers.slice(0, -1).map((a) => a.status)).toEqual(answers.slice(0, -1).map(() => 404));
    expect(refused.status, refused.text).toBe(429);
    expect(refused.contentType).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
