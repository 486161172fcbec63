// Prompt caching end to end, with the gateway, agent, tools and pricing as processes on NATS and
// FerretDB and the test kit's fake Anthropic Messages server as the tenant's Anthropic endpoint
// (API.md `promptCache`): explicit cache_control breakpoints after the stable prefix of the system
// prompt and after the last message, none without the option, and the cache reads and writes
// priced at their own prices.
import type { FakeAnthropic, SseFrame } from '@keel/testkit';
import { startFakeAnthropic } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { pricingClient } from './support/grpc-client.js';
import { answerOf, openTurnStream } from './support/http.js';

const MODEL = 'anthropic:claude-sonnet-4-5';

describe('prompt cache breakpoints (gateway, agent, tools, pricing as processes; fake Anthropic)', () => {
  let platform: GatewayPlatform;
  let anthropic: FakeAnthropic;
  let keys: Record<'admin' | 'editor', string>;

  const turn = async (agentId: string, content: string): Promise<SseFrame[]> => {
    const created = await answerOf(
      await platform.request('POST', '/v1/conversations', keys.editor, { agentId }),
    );
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, keys.editor, id, { content });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    return frames;
  };

  beforeAll(async () => {
    anthropic = await startFakeAnthropic();
    platform = await startGatewayPlatform('promptcache', { pricingFor: ['agent'] });
    ({ keys } = await platform.tenantWithKeys('promptcache-a', ['admin', 'editor']));
    const provider = await platform.request('PUT', '/v1/providers/anthropic', keys.admin, {
      apiKey: 'sk-ant-e2e',
      baseUrl: anthropic.url,
    });
    expect(provider.status).toBe(200);
    for (const [agentId, promptCache] of [
      ['cached', true],
      ['plain', false],
    ] as const) {
      const agent = await platform.request('PUT', `/v1/agents/${agentId}`, keys.admin, {
        model: MODEL,
        instructions: 'Answer in one sentence.',
        promptCache,
      });
      expect(agent.status).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
    await anthropic?.close();
  });

  it('marks the stable prefix and the last message with cache_control, and prices cache reads and writes', async () => {
    anthropic.script({
      text: 'Cached answer.',
      inputTokens: 100,
      cacheReadTokens: 2_000,
      cacheWriteTokens: 500,
      outputTokens: 50,
    });
    const frames = await turn('cached', 'Hello [cache-1]');
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const body = anthropic.requests.at(-1)!.body as {
      system: Array<{ type: string; text: string; cache_control?: unknown }>;
      messages: Array<{
        role: string;
        content: Array<{ type: string; text: string; cache_control?: unknown }> | string;
      }>;
    };
    expect(body.system[0]).toMatchObject({ type: 'text', cache_control: { type: 'ephemeral' } });
    expect(body.system[0]!.text).toMatch(/# Instructions\nAnswer in one sentence\./);
    expect(body.system[0]!.text).not.toContain('# State');
    const last = body.messages.at(-1)!;
    expect(last.content).toEqual([
      { type: 'text', text: 'Hello [cache-1]', cache_control: { type: 'ephemeral' } },
    ]);

    const usage = frames.find((f) => f.event === 'usage')!.data as {
      model: string;
      cacheReadTokens: number;
      completionTokens: number;
      costUsd: number;
    };
    expect(usage.model).toBe(MODEL);
    expect(usage.cacheReadTokens).toBe(2_000);
    // 50, plus the 1 output token Anthropic's message_start reports, which LangChain adds in.
    expect(usage.completionTokens).toBe(51);
    const client = pricingClient(platform.pricingAddress!);
    const { price } = await client
      .unary('getPrice', undefined, { model: MODEL })
      .finally(() => client.close());
    const expected =
      (100 * price!.inputUsdPerMtok +
        2_000 * price!.cacheReadUsdPerMtok! +
        500 * price!.cacheWriteUsdPerMtok! +
        usage.completionTokens * price!.outputUsdPerMtok) /
      1e6;
    expect(usage.costUsd).toBeCloseTo(expected, 9);
  });

  it('sends no cache_control without promptCache', async () => {
    anthropic.script({ text: 'Plain answer.' });
    const frames = await turn('plain', 'Hello [cache-2]');
    expect(frames.at(-1)!.event).toBe('turn.completed');
    expect(JSON.stringify(anthropic.requests.at(-1)!.body)).not.toContain('cache_control');
  });

  it("maps extended thinking as Anthropic takes it (no temperature, no top_p) and refuses an agent's own conflicting ones", async () => {
    const put = (agentId: string, body: object) =>
      platform.request('PUT', `/v1/agents/${agentId}`, keys.admin, { model: MODEL, ...body }).then(answerOf);
    const thinking = { thinkingBudgetTokens: 2048, maxOutputTokens: 4096 };
    expect((await put('thinker', { providerOptions: thinking })).status).toBe(200);
    anthropic.script({ text: 'Thought it through.' });
    const frames = await turn('thinker', 'Think [think-1]');
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const body = anthropic.requests.at(-1)!.body as Record<string, unknown>;
    expect(body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2048 }, max_tokens: 4096 });
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('top_p');
    const cases: Array<[object, RegExp]> = [
      [{ temperature: 0, providerOptions: thinking }, /^temperature/],
      [{ providerOptions: { ...thinking, topP: 0.9 } }, /^providerOptions\.topP/],
      [
        { providerOptions: { thinkingBudgetTokens: 4096, maxOutputTokens: 2048 } },
        /^providerOptions\.thinkingBudgetTokens/,
      ],
    ];
    for (const [body, field] of cases) {
      const answer = await put('overthinker', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect((answer.body as { detail: string }).detail).toMatch(field);
    }
    expect((await answerOf(await platform.request('GET', '/v1/agents/overthinker', keys.admin))).status).toBe(
      404,
    );
  });
});
