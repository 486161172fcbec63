// One gateway in front of two agent processes (AGENT_GRPC_URL a list, as in compose): its calls
// spread over both, and when one is SIGKILLed the gateway keeps answering (no 503): reads, and
// writes that carry an Idempotency-Key, go to the survivor; every turn ran once.
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, startFakeOpenAI, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayRequest, jsonOf } from './support/http.js';
import { platformEnv, startAgent, startGateway, startTools } from './support/platform.js';

describe('a gateway balancing over two agent instances', () => {
  const env = platformEnv('agent_balancing');
  const operatorKey = `op_${uniqueName('balancing')}`;
  let fake: FakeOpenAI;
  const agents: ProcessHandle[] = [];
  const others: ProcessHandle[] = [];
  let base = '';
  let key = '';

  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    gatewayRequest(base, method, path, key, body, headers);

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    const agentPorts = [await freePort(), await freePort()];
    agents.push(
      ...(await Promise.all(agentPorts.map((port, i) => startAgent(env, port, fake.url, `agent-${i + 1}`)))),
    );
    const [port, grpcPort] = [await freePort(), await freePort()];
    others.push(
      await startTools(env),
      await startGateway(env, { port, grpcPort, agentPort: agentPorts[0]! }, operatorKey, {
        extra: { AGENT_GRPC_URL: agentPorts.map((p) => `127.0.0.1:${p}`).join(',') },
      }),
    );
    base = `http://127.0.0.1:${port}`;
    const op = (path: string, body: unknown) => gatewayRequest(base, 'POST', path, operatorKey, body);
    const tenant = await jsonOf(await op('/v1/tenants', { name: 'Balanced' }));
    const admin = (await jsonOf(await op(`/v1/tenants/${String(tenant.id)}/keys`, { role: 'admin' })))
      .key as string;
    key = (await jsonOf(await op(`/v1/tenants/${String(tenant.id)}/keys`, { role: 'editor' }))).key as string;
    const put = (path: string, body: unknown) => gatewayRequest(base, 'PUT', path, admin, body);
    expect((await put('/v1/providers/openai', { baseUrl: fake.url, apiKey: 'sk-e2e' })).status).toBe(200);
    expect((await put('/v1/agents/support', { model: 'openai:gpt-4o-mini', maxSteps: 2 })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...agents, ...others].map((p) => p.kill('SIGTERM')));
    await fake?.close();
  });

  it('answers every read and keyed write while one is SIGKILLed', async () => {
    fake.script(...Array.from({ length: 200 }, () => fakeReply.text('ok')));
    const create = async (i: number) => {
      const response = await request(
        'POST',
        '/v1/conversations',
        { agentId: 'support' },
        {
          'idempotency-key': `create-${i}`,
        },
      );
      expect(response.status).toBe(201);
      return (await jsonOf(response)).id as string;
    };
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await create(i));

    const statuses: number[] = [];
    const traffic = (async () => {
      for (let i = 0; i < 40; i++) {
        const id = ids[i % ids.length]!;
        statuses.push((await request('GET', `/v1/conversations/${id}`)).status);
        const sent = await request(
          'POST',
          `/v1/conversations/${id}/messages`,
          { content: `m${i}`, ifBusy: 'enqueue' },
          {
            'idempotency-key': `send-${i}`,
          },
        );
        statuses.push(sent.status);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await agents[0]!.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await traffic;
    expect(statuses.filter((s) => s === 503)).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 202)).toBe(true);
    // Every accepted message's turn ends (the survivor takes over the killed one's steps).
    await eventually(
      async () => {
        for (const id of ids) {
          const view = await jsonOf(await request('GET', `/v1/conversations/${id}`));
          expect(view.status).toBe('idle');
        }
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }, 180_000);
});
