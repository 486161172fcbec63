// Agent model options end to end, with the gateway, agent, tools and pricing as processes on NATS
// and FerretDB and the fake OpenAI server as the provider (API.md "Models, defaults and agent
// options"): what the provider receives for each provider option, a fallback after a scripted
// 429 with usage naming the model that answered and its price, and bad options as 400s.
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import type { SseFrame } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { answerOf, openTurnStream } from './support/http.js';

interface ModelRow {
  id: string;
  inputPerMTok: number;
  outputPerMTok: number;
}

describe('agent model options (gateway, agent, tools, pricing as processes)', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor', string>;

  const putAgent = (agentId: string, body: unknown) =>
    platform.request('PUT', `/v1/agents/${agentId}`, keys.admin, body).then(answerOf);

  /** Runs one streamed turn of `agentId` on `content` (as `editor`); its frames. */
  const turn = async (agentId: string, content: string, editor = keys.editor): Promise<SseFrame[]> => {
    const created = await answerOf(await platform.request('POST', '/v1/conversations', editor, { agentId }));
    expect(created.status).toBe(201);
    const { id } = created.body as { id: string };
    const stream = await openTurnStream(platform.base, editor, id, { content });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      30_000,
    );
    stream.close();
    return frames;
  };

  beforeAll(async () => {
    platform = await startGatewayPlatform('modelopts', { pricingFor: ['agent', 'gateway'] });
    ({ keys } = await platform.tenantWithKeys('modelopts-a', ['admin', 'editor']));
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('sends each provider option as the provider names it, and stores the options', async () => {
    const options = { providerOptions: { reasoningEffort: 'low', maxOutputTokens: 300, topP: 0.5 } };
    const stored = await putAgent('reasoner', { model: 'openai:o3-mini', ...options });
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject(options);
    platform.fake.on(lastUserMessageIncludes('[opts-1]'), fakeReply.text('Thought about it.'));
    const frames = await turn('reasoner', 'Think [opts-1]');
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const sent = platform.fake.requests.filter((r) => JSON.stringify(r.body?.messages).includes('[opts-1]'));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.body).toMatchObject({
      model: 'o3-mini',
      reasoning_effort: 'low',
      max_completion_tokens: 300,
      top_p: 0.5,
    });
  });

  it('falls back after a 429: usage names the model that answered, priced as that model', async () => {
    const stored = await putAgent('resilient', {
      model: 'openai:gpt-4o-mini',
      providerOptions: { maxOutputTokens: 200 },
      fallbackModels: ['openai:gpt-4o'],
    });
    expect(stored.status).toBe(200);
    platform.fake.on(
      lastUserMessageIncludes('[fb-1]'),
      fakeReply.error(429, 'Rate limit reached', { headers: { 'retry-after': '0' } }),
      fakeReply.text('Answered by the fallback.', { usage: { promptTokens: 1_000, completionTokens: 100 } }),
    );
    const frames = await turn('resilient', 'Hello [fb-1]');
    expect(frames.at(-1)!.event).toBe('turn.completed');
    const sent = platform.fake.requests.filter((r) => JSON.stringify(r.body?.messages).includes('[fb-1]'));
    expect(sent.map((r) => [r.body?.model, r.body?.['max_tokens']])).toEqual([
      ['gpt-4o-mini', 200],
      ['gpt-4o', 200],
    ]);
    const usage = frames.find((f) => f.event === 'usage')!.data as { model: string; costUsd: number };
    expect(usage.model).toBe('openai:gpt-4o');
    const models = (await answerOf(await platform.request('GET', '/v1/models', keys.editor))).body as {
      data: ModelRow[];
    };
    const price = models.data.find((m) => m.id === 'openai:gpt-4o')!;
    expect(usage.costUsd).toBeCloseTo((1_000 * price.inputPerMTok + 100 * price.outputPerMTok) / 1e6, 9);
  });

  it('an agent without model or temperature follows the defaults as they are when its turn starts', async () => {
    const b = (await platform.tenantWithKeys('modelopts-b', ['admin', 'editor'])).keys;
    const request = (method: string, path: string, body?: unknown) =>
      platform.request(method, path, b.admin, body).then(answerOf);
    expect(
      (await request('PUT', '/v1/defaults', { model: 'openai:gpt-4o-mini', temperature: 0.2 })).status,
    ).toBe(200);
    expect((await request('PUT', '/v1/agents/follower', { instructions: 'Follow.' })).body).toMatchObject({
      model: 'openai:gpt-4o-mini',
      temperature: 0.2,
    });
    await request('PUT', '/v1/agents/pinned', { model: 'openai:gpt-4o-mini', temperature: 0.5 });
    // The defaults change after the agents were written: the one without its own fields follows.
    await request('PUT', '/v1/defaults', { model: 'openai:gpt-4o', temperature: 0.7 });
    expect((await request('GET', '/v1/agents/follower')).body).toMatchObject({
      model: 'openai:gpt-4o',
      temperature: 0.7,
    });
    expect((await request('GET', '/v1/agents/pinned')).body).toMatchObject({
      model: 'openai:gpt-4o-mini',
      temperature: 0.5,
    });
    platform.fake.on(lastUserMessageIncludes('[dflt-'), fakeReply.text('Done.'), fakeReply.text('Done.'));
    for (const agentId of ['follower', 'pinned']) {
      expect((await turn(agentId, `Hi [dflt-${agentId}]`, b.editor)).at(-1)!.event).toBe('turn.completed');
    }
    const sent = (tag: string) =>
      platform.fake.requests.find((r) => JSON.stringify(r.body?.messages).includes(tag))!.body;
    expect(sent('[dflt-follower]')).toMatchObject({ model: 'gpt-4o', temperature: 0.7 });
    expect(sent('[dflt-pinned]')).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.5 });
  });

  it('refuses bad options naming them, and stores nothing', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [
        { model: 'openai:gpt-4o', providerOptions: { thinkingBudgetTokens: 2048 } },
        /providerOptions\.thinkingBudgetTokens/,
      ],
      [
        { model: 'anthropic:claude-sonnet-4-5', providerOptions: { reasoningEffort: 'low' } },
        /providerOptions\.reasoningEffort/,
      ],
      [{ model: 'openai:gpt-4o', providerOptions: { temperatureish: 1 } }, /providerOptions\.temperatureish/],
      [
        { model: 'openai:gpt-4o', providerOptions: { reasoningEffort: 'max' } },
        /providerOptions\.reasoningEffort/,
      ],
      [{ model: 'openai:gpt-4o', fallbackModels: ['acme:big'] }, /fallbackModels\[0\]/],
      // Every model the agent may call must take the options: a fallback of another provider too.
      [
        {
          model: 'openai:o3-mini',
          providerOptions: { reasoningEffort: 'low' },
          fallbackModels: ['openai:gpt-4o', 'anthropic:claude-sonnet-4-5'],
        },
        /providerOptions\.reasoningEffort .*anthropic:claude-sonnet-4-5/,
      ],
      [{ model: 'openai:gpt-4o', fallbackModels: 'openai:gpt-4o-mini' }, /fallbackModels/],
      [{ model: 'openai:gpt-4o', promptCache: 'yes' }, /promptCache/],
      [{ model: 'openai:gpt-4o', context: { keepToolResults: -1 } }, /context\.keepToolResults/],
    ];
    for (const [body, field] of cases) {
      const answer = await putAgent('bad', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect((answer.body as { code: string }).code).toBe('invalid_request');
      expect((answer.body as { detail: string }).detail).toMatch(field);
    }
    expect((await answerOf(await platform.request('GET', '/v1/agents/bad', keys.admin))).status).toBe(404);
  });
});
