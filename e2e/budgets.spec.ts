// Budgets through the public API: a tenant whose monthly budget fits exactly N turns
// sends 10×N messages at once (each to its own conversation) — at most N turns run, the rest are
// refused with 402 budget_exceeded and leave nothing in their conversation; after the turns end,
// the month's spend is N × the cost of one turn. Gateway, agent and tools run as processes on real
// NATS and FerretDB, with the pricing service pricing each model call; the model is the test
// kit's fake OpenAI server with fixed token counts.
import { status } from '@grpc/grpc-js';
import { MongoEventStore } from '@keel/core/mongodb';
import type { FakeOpenAI } from '@keel/testkit';
import { eventually, fakeReply } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { DeepPartial, SendMessageRequest } from '@keel/proto/keel/conversations/v1/conversations';
import { conversationsClient, sendStatus } from './support/grpc-client.js';
import type { Answer } from './support/http.js';
import { answerOf } from './support/http.js';

/** Turns the budget fits. */
const N = 3;
/**
 * What a turn reserves (KEEL_BUDGET_TURN_RESERVE_USD), chosen equal to what one scripted turn
 * costs at gpt-4o-mini's catalogue price (0.15 USD/M input, 0.60 USD/M output): 100,000 prompt
 * tokens and 25,000 completion tokens are 0.015 + 0.015 USD.
 */
const TURN_USD = 0.03;
const BUDGET_USD = N * TURN_USD;
const USAGE = { promptTokens: 100_000, completionTokens: 25_000 };

/** The status a streaming SendMessage on the gateway's public gRPC API ends with. */
const grpcSendStatus = (address: string, key: string, request: DeepPartial<SendMessageRequest>) => {
  const client = conversationsClient(address);
  return sendStatus(client, key, request).finally(() => client.close());
};

describe('monthly budgets hold under concurrency (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let OPERATOR_KEY = '';
  let fake: FakeOpenAI;
  let store: MongoEventStore;
  let tenantId = '';
  let key = '';
  const conversations: string[] = [];
  const admitted: string[] = [];

  const call = async (method: string, path: string, bearer: string, body?: unknown): Promise<Answer> =>
    answerOf(await platform.request(method, path, bearer, body));

  const send = (conversationId: string, content: string) =>
    call('POST', `/v1/conversations/${conversationId}/messages`, key, { content });

  const budgetEvents = async () => {
    const month = new Date().toISOString().slice(0, 7);
    return store.read(tenantId, `budget-${month}`);
  };

  beforeAll(async () => {
    platform = await startGatewayPlatform('budgets', {
      pricingFor: ['agent'],
      agentEnv: { KEEL_BUDGET_TURN_RESERVE_USD: String(TURN_USD) },
      // The burst below is one key's 10×N requests at once: only the budget may refuse them.
      gatewayEnv: { KEEL_RATE_LIMIT_RPM: '0', KEEL_TENANT_RATE_LIMIT_RPM: '0' },
    });
    ({ fake, operatorKey: OPERATOR_KEY } = platform);
    store = await MongoEventStore.connect(platform.env.MONGODB_URL!);
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await store?.close();
  });

  it('operator: a tenant with an admin key, an agent, and a budget of N turns', async () => {
    const tenant = await call('POST', '/v1/tenants', OPERATOR_KEY, { name: 'Thrifty' });
    expect(tenant.status).toBe(201);
    tenantId = (tenant.body as { id: string }).id;
    const issued = await call('POST', `/v1/tenants/${tenantId}/keys`, OPERATOR_KEY, { role: 'admin' });
    key = (issued.body as { key: string }).key;
    const agentPut = await call('PUT', '/v1/agents/support', key, {
      model: 'openai:gpt-4o-mini',
      instructions: 'Answer briefly.',
      tools: [],
      maxSteps: 2,
    });
    expect(agentPut.status, JSON.stringify(agentPut.body)).toBe(200);
    const budget = await call('PUT', `/v1/tenants/${tenantId}/budget`, OPERATOR_KEY, {
      monthlyUsd: BUDGET_USD,
    });
    expect(budget.status, JSON.stringify(budget.body)).toBe(200);
    for (let i = 0; i < 10 * N; i++) {
      const created = await call('POST', '/v1/conversations', key, { agentId: 'support' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      conversations.push((created.body as { id: string }).id);
    }
    // The agent re-reads the budgets at most once a second (KEEL_BUDGET_REFRESH_MS).
    await new Promise((resolve) => setTimeout(resolve, 1_100));
  });

  it(`10×N messages at once: N are accepted (202) and run, the rest get 402 budget_exceeded`, async () => {
    for (let i = 0; i < 10 * N; i++) fake.script(fakeReply.text('Done.', { usage: USAGE }));
    const answers = await Promise.all(conversations.map((id, i) => send(id, `question ${i}`)));

    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array<number>(N).fill(202), ...Array<number>(9 * N).fill(402)]);
    answers.forEach((answer, i) => {
      if (answer.status === 202) {
        admitted.push(conversations[i]!);
        return;
      }
      expect(answer.contentType).toMatch(/^application\/problem\+json/);
      expect(answer.body).toMatchObject({ status: 402, code: 'budget_exceeded' });
      expect((answer.body as { detail: string }).detail).toMatch(/monthly budget of 0\.09 USD is used up/);
    });

    // Only the admitted turns started, and a refused message left nothing in its conversation.
    for (const id of conversations) {
      const types = (await store.read(tenantId, `conversation-${id}`)).map((e) => e.type);
      if (admitted.includes(id)) expect(types).toContain('TurnStarted');
      else expect(types).toEqual(['ConversationCreated']);
    }
    for (const id of admitted) {
      await eventually(
        async () => {
          const state = await call('GET', `/v1/conversations/${id}`, key);
          expect(state.body).toMatchObject({ status: 'idle' });
          expect((state.body as { messages: unknown[] }).messages).toHaveLength(2);
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
    }
    const chatRequests = fake.requests.filter((r) => r.path.endsWith('/chat/completions'));
    expect(chatRequests).toHaveLength(N);
  });

  it('after the turns end, the month has spent N × the cost of one turn, nothing stays reserved', async () => {
    const costs = await Promise.all(
      admitted.map(async (id) => {
        const state = await call('GET', `/v1/conversations/${id}`, key);
        return (state.body as { usage: { costUsd: number } }).usage.costUsd;
      }),
    );
    for (const cost of costs) expect(cost).toBeCloseTo(TURN_USD, 9);

    const events = await eventually(
      async () => {
        const all = await budgetEvents();
        const closing = all.filter((e) => e.type === 'BudgetSettled' || e.type === 'BudgetReleased');
        expect(closing).toHaveLength(N);
        return all;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const reserved = events.filter((e) => e.type === 'BudgetReserved');
    expect(reserved.map((e) => (e.data as { estimateUsd: number }).estimateUsd)).toEqual(
      Array<number>(N).fill(TURN_USD),
    );
    const settled = events.filter((e) => e.type === 'BudgetSettled');
    expect(settled.map((e) => e.data)).toEqual(
      admitted.map(() => expect.objectContaining({ costUsd: expect.closeTo(TURN_USD, 9), unpricedSteps: 0 })),
    );
    const spent = settled.reduce((sum, e) => sum + (e.data as { costUsd: number }).costUsd, 0);
    expect(spent).toBeCloseTo(N * TURN_USD, 9);
  });

  it('the spent budget refuses the next message (HTTP, SSE, gRPC) and writes nothing', async () => {
    const id = admitted[0]!;
    const before = await store.streamVersion(tenantId, `conversation-${id}`);
    const next = await send(id, 'one more');
    expect(next.status).toBe(402);
    expect(next.body).toMatchObject({ code: 'budget_exceeded' });
    expect((next.body as { detail: string }).detail).toMatch(/0\.09 USD spent, 0 USD reserved/);
    const streamed = await platform.request(
      'POST',
      `/v1/conversations/${id}/messages`,
      key,
      { content: 'and one more' },
      { accept: 'text/event-stream' },
    );
    expect(streamed.status).toBe(402);
    expect(streamed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await streamed.json()).toMatchObject({ code: 'budget_exceeded' });
    const overGrpc = await grpcSendStatus(platform.grpcAddress, key, {
      conversationId: id,
      content: 'via gRPC',
    });
    expect(overGrpc.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(overGrpc.details).toMatch(/monthly budget of 0\.09 USD is used up/);
    expect(await store.streamVersion(tenantId, `conversation-${id}`)).toBe(before);
    expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(N);
  });
});
