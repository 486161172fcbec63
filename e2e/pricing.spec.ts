// Pricing, end to end: the pricing and agent services as separate processes on real NATS
// and FerretDB, the real @langchain/openai client against the test kit's fake provider reporting
// usage with cached tokens. Each model call's UsageRecorded carries the catalogue cost (cached
// tokens at the cache-read price), an operator's override prices later calls and leaves recorded
// ones alone, an unknown model and an unreachable pricing service are recorded unpriced with the
// reason, and the turn runs on either way.
import type { RecordedEvent } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import type { ModelUsage } from '@keel/events';
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { fakeReply, freePort, lastUserMessageIncludes, startFakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationStatus } from '@keel/proto/keel/conversations/v1/conversations';
import { agentClient, conversationSteps, testCallers } from './support/agent-client.js';
import type { DeepPartial, SetPriceRequest } from '@keel/proto/keel/pricing/v1/pricing';
import { pricingClient } from './support/grpc-client.js';
import { platformEnv, startAgent, startPricing } from './support/platform.js';

const { tenant, editor } = testCallers('e2epricing');

/** A model call's usage as UsageRecorded carries it. */
type Usage = ModelUsage;

/** A SetPrice call on the pricing service, as the gateway's operator route would make it. */
const setPrice = (address: string, request: DeepPartial<SetPriceRequest>): Promise<unknown> => {
  const client = pricingClient(address);
  return client.unary('setPrice', undefined, request).finally(() => client.close());
};

describe('model calls priced by the pricing service (pricing and agent as separate processes)', () => {
  let pricingPort: number;
  let env: Record<string, string>;
  let fake: FakeOpenAI;
  let pricing: ProcessHandle;
  let agent: ProcessHandle;
  let client: ReturnType<typeof agentClient>;
  let store: MongoEventStore;

  const turn = async (agentId: string, content: string) => {
    const steps = conversationSteps(client, editor);
    const id = await steps.start(agentId, content);
    await steps.waitStatus(id, ConversationStatus.IDLE);
    const events: RecordedEvent[] = await store.read(tenant.tenantId, `conversation-${id}`);
    return {
      id,
      usage: events.filter((e) => e.type === 'UsageRecorded').map((e) => e.data as Usage),
    };
  };

  beforeAll(async () => {
    pricingPort = await freePort();
    env = platformEnv('pricing', { PRICING_GRPC_URL: `127.0.0.1:${pricingPort}` });
    fake = await startFakeOpenAI();
    const agentPort = await freePort();
    [pricing, agent] = await Promise.all([
      startPricing(env, pricingPort),
      startAgent(env, agentPort, fake.url),
    ]);
    client = agentClient(`127.0.0.1:${agentPort}`);
    store = await MongoEventStore.connect(env['MONGODB_URL']!);
    for (const [agentId, model] of [
      ['mini', 'openai:gpt-4o-mini'],
      ['mystery', 'openai:gpt-9-turbo'],
    ] as const) {
      await client.call('putAgent', tenant, {
        agent: { agentId, model, instructions: 'Answer briefly.', tools: [], maxSteps: 2, temperature: 0 },
      });
    }
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await store?.close();
    await Promise.all([agent?.kill('SIGTERM'), pricing?.kill('SIGTERM')]);
    await fake?.close();
  });

  it('records the catalogue cost of a call with cached tokens, the dated model id priced as its family', async () => {
    fake.on(
      lastUserMessageIncludes('[p1]'),
      fakeReply.text('Hello.', {
        model: 'gpt-4o-mini-2024-07-18',
        usage: { promptTokens: 1200, completionTokens: 80, cachedTokens: 1000 },
      }),
    );
    const { id, usage } = await turn('mini', '[p1] hi');
    // gpt-4o-mini: 200 uncached × $0.15 + 1000 cached × $0.075 + 80 out × $0.60 per million = $0.000153
    expect(usage).toEqual([
      {
        turnId: expect.any(String),
        step: 1,
        model: 'openai:gpt-4o-mini-2024-07-18',
        promptTokens: 1200,
        completionTokens: 80,
        cacheReadTokens: 1000,
        cacheWriteTokens: 0,
        costUsd: 0.000153,
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      },
    ]);
    const view = await client.call('getConversation', editor, {
      request: { conversationId: id },
    });
    expect(view.conversation?.usage?.costUsd).toBeCloseTo(0.000153, 12);
  });

  it('prices later calls with an operator override from its instant on; calls recorded before keep their cost', async () => {
    fake.on(
      lastUserMessageIncludes('[p2]'),
      fakeReply.text('Before.', { usage: { promptTokens: 1_000_000, completionTokens: 0, cachedTokens: 0 } }),
      fakeReply.text('After.', { usage: { promptTokens: 1_000_000, completionTokens: 0, cachedTokens: 0 } }),
    );
    const before = await turn('mini', '[p2] before');
    expect(before.usage[0]?.costUsd).toBe(0.15);
    await setPrice(`127.0.0.1:${pricingPort}`, {
      model: 'openai/gpt-4o-mini',
      inputUsdPerMtok: 0.12,
      outputUsdPerMtok: 0.5,
      reason: 'negotiated rate',
      actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
    });
    const after = await turn('mini', '[p2] after');
    expect(after.usage[0]?.costUsd).toBe(0.12);
    const again = await store.read(tenant.tenantId, `conversation-${before.id}`);
    expect(again.filter((e) => e.type === 'UsageRecorded').map((e) => (e.data as Usage).costUsd)).toEqual([
      0.15,
    ]);
  });

  it('records a model the catalogue does not know as unpriced with the reason, never as 0', async () => {
    fake.on(
      lastUserMessageIncludes('[p3]'),
      fakeReply.text('Who knows.', { usage: { promptTokens: 50, completionTokens: 5 } }),
    );
    const { usage } = await turn('mystery', '[p3] hi');
    expect(usage).toEqual([
      expect.objectContaining({
        model: 'openai:gpt-9-turbo',
        costUsd: null,
        costReason: expect.stringContaining('unknown model openai:gpt-9-turbo'),
      }),
    ]);
  });

  it('runs the turn on when pricing is down, recording the call unpriced with the reason; priced again once it is back', async () => {
    await pricing.kill('SIGTERM');
    fake.on(
      lastUserMessageIncludes('[p4]'),
      fakeReply.text('Still here.', { usage: { promptTokens: 10, completionTokens: 2 } }),
      fakeReply.text('Back.', { usage: { promptTokens: 1_000_000, completionTokens: 0 } }),
    );
    const down = await turn('mini', '[p4] down');
    expect(down.usage).toEqual([
      expect.objectContaining({
        costUsd: null,
        costReason: expect.stringContaining('pricing unavailable'),
      }),
    ]);
    expect(agent.stdoutLines.some((line) => line.includes('model call not priced'))).toBe(true);
    pricing = await startPricing(env, pricingPort, 'pricing-2');
    // The restarted instance rebuilt the override from the log.
    const back = await turn('mini', '[p4] back');
    expect(back.usage).toEqual([expect.objectContaining({ costUsd: 0.12 })]);
  });
});
