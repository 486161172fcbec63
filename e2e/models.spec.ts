// Models and defaults through the public API, with the agent, pricing and gateway as processes on
// NATS and FerretDB (API.md "Models, defaults and agent options"): the catalogue with an
// operator's override and `configured` per tenant, and the tenant's defaults, bad ones 400
// naming the field with nothing written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import { pricingClient } from './support/grpc-client.js';
import { answerOf } from './support/http.js';

interface ModelRow {
  id: string;
  contextWindow: number | null;
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok: number;
  configured: boolean;
}

describe('models and defaults, end to end', () => {
  let platform: GatewayPlatform;
  let keys: Record<'admin' | 'editor' | 'viewer', string>;
  let otherAdmin: string;

  const models = async (key: string): Promise<ModelRow[]> => {
    const answer = await answerOf(await platform.request('GET', '/v1/models', key));
    expect(answer.status).toBe(200);
    return (answer.body as { data: ModelRow[] }).data;
  };
  const row = (rows: ModelRow[], id: string): ModelRow | undefined => rows.find((r) => r.id === id);
  const putDefaults = (key: string, body: unknown) =>
    platform.request('PUT', '/v1/defaults', key, body).then(answerOf);

  beforeAll(async () => {
    // The platform's environment has an OpenAI key and no Anthropic one.
    platform = await startGatewayPlatform('models', { pricingFor: ['agent', 'gateway'] });
    ({ keys } = await platform.tenantWithKeys('models-a', ['admin', 'editor', 'viewer']));
    otherAdmin = (await platform.tenantWithKeys('models-b', ['admin'])).keys.admin;
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('lists the catalogue, configured where the tenant can call the provider now', async () => {
    const before = await models(keys.viewer);
    const mini = row(before, 'openai:gpt-4o-mini');
    expect(mini).toMatchObject({ configured: true });
    expect(mini!.contextWindow).toBeGreaterThan(0);
    expect(mini!.inputPerMTok).toBeGreaterThan(0);
    const claude = before.find((r) => r.id.startsWith('anthropic:'));
    expect(claude).toMatchObject({ configured: false });

    const provider = await platform.request('PUT', '/v1/providers/anthropic', keys.admin, {
      apiKey: 'sk-ant-a',
    });
    expect(provider.status).toBe(200);
    expect(row(await models(keys.viewer), claude!.id)).toMatchObject({ configured: true });
    // Another tenant's credential is not this one's.
    expect(row(await models(otherAdmin), claude!.id)).toMatchObject({ configured: false });
  });

  it("shows the operator's override of a model's price", async () => {
    const client = pricingClient(platform.pricingAddress!);
    try {
      await client.unary('setPrice', undefined, {
        model: 'openai:gpt-4o-mini',
        inputUsdPerMtok: 1.5,
        outputUsdPerMtok: 6,
        cacheReadUsdPerMtok: 0.5,
        reason: 'e2e override',
        actor: { keyId: 'op', role: 'operator' },
      });
    } finally {
      client.close();
    }
    expect(row(await models(keys.viewer), 'openai:gpt-4o-mini')).toMatchObject({
      inputPerMTok: 1.5,
      outputPerMTok: 6,
      cacheReadPerMTok: 0.5,
      configured: true,
    });
  });

  it('sets defaults field by field; viewers read them, editors may not write', async () => {
    const first = await putDefaults(keys.admin, { model: 'openai:gpt-4o', maxSteps: 4 });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ model: 'openai:gpt-4o', maxSteps: 4 });
    const second = await putDefaults(keys.admin, { temperature: 0.3 });
    expect(second.body).toEqual({ model: 'openai:gpt-4o', maxSteps: 4, temperature: 0.3 });
    const read = await answerOf(await platform.request('GET', '/v1/defaults', keys.viewer));
    expect(read.body).toEqual(second.body);
    expect((await putDefaults(keys.editor, { maxSteps: 2 })).status).toBe(403);
    const other = await answerOf(await platform.request('GET', '/v1/defaults', otherAdmin));
    expect(other.body).toEqual({});
  });

  it('gives an agent without model, temperature or maxSteps the defaults; its own fields win', async () => {
    const bare = await answerOf(await platform.request('PUT', '/v1/agents/bare', keys.admin, {}));
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ model: 'openai:gpt-4o', maxSteps: 4, temperature: 0.3 });
    const own = await answerOf(
      await platform.request('PUT', '/v1/agents/own', keys.admin, {
        model: 'openai:gpt-4o-mini',
        maxSteps: 2,
      }),
    );
    expect(own.body).toMatchObject({ model: 'openai:gpt-4o-mini', maxSteps: 2, temperature: 0.3 });
    // Without a default model, an agent must name one.
    const other = await answerOf(await platform.request('PUT', '/v1/agents/bare', otherAdmin, {}));
    expect(other.status).toBe(400);
    expect((other.body as { detail: string }).detail).toMatch(/^model /);
  });

  it('refuses bad defaults naming the field, and writes nothing', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ maxSteps: 0 }, /maxSteps/],
      [{ maxSteps: 'many' }, /maxSteps/],
      [{ temperature: 3 }, /temperature/],
      [{ model: 'gpt-4o' }, /model/],
      [{ model: 'acme:large' }, /model|provider/],
      [{ colour: 'red' }, /colour/],
    ];
    for (const [body, field] of cases) {
      const answer = await putDefaults(keys.admin, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      const problem = answer.body as { code: string; detail: string };
      expect(problem.code).toBe('invalid_request');
      expect(problem.detail).toMatch(field);
    }
    const read = await answerOf(await platform.request('GET', '/v1/defaults', keys.viewer));
    expect(read.body).toEqual({ model: 'openai:gpt-4o', maxSteps: 4, temperature: 0.3 });
  });
});
