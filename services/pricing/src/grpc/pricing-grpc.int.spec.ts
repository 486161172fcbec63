// The pricing service as separate processes on real NATS and MongoDB (FerretDB), called over
// gRPC: the shipped catalogue, costs, bad input as statuses, and an operator's override seen by
// the instance that recorded it, by another running instance, and by one started afterwards.
import type { ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { MongoEventStore } from '@keel/core/mongodb';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import type { ProcessHandle } from '@keel/testkit';
import { freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

type Callback = (error: ServiceError | null, response?: unknown) => void;
type Unary = (request: object, callback: Callback) => void;
interface PricingClient {
  close(): void;
}
interface Price {
  model: string;
  inputUsdPerMtok: number;
  outputUsdPerMtok: number;
  cacheReadUsdPerMtok?: number;
  cacheWriteUsdPerMtok?: number;
  contextWindowTokens: number;
  effectiveFrom: string;
  source: string;
}

const { natsUrl, mongoUrl: baseMongoUrl } = testInfra();
const mongoUrl = mongoUrlFor(uniqueName('pricinggrpc'), baseMongoUrl);
const env = {
  MONGODB_URL: mongoUrl,
  NATS_URL: natsUrl,
  KEEL_NATS_STREAM: uniqueName('PRICINGGRPC'),
  KEEL_SUBJECT_PREFIX: `test.${uniqueName('pricinggrpc')}`,
  LOG_LEVEL: 'info',
};
const processes: ProcessHandle[] = [];
const clients: PricingClient[] = [];

const startPricing = async (name: string): Promise<PricingClient> => {
  const port = await freePort();
  processes.push(
    await startProcess({
      name,
      entry: 'services/pricing/src/main.ts',
      env: { ...env, GRPC_PORT: String(port) },
      readyLine: /"msg":"ready"/,
      readyTimeoutMs: 60_000,
    }),
  );
  const definition = loadSync('keel/pricing/v1/pricing.proto', {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [protoRoot()],
  });
  const root = loadPackageDefinition(definition) as unknown as {
    keel: { pricing: { v1: { PricingService: ServiceClientConstructor } } };
  };
  const client = new root.keel.pricing.v1.PricingService(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
  ) as unknown as PricingClient;
  clients.push(client);
  return client;
};

/** One unary call of keel.pricing.v1.PricingService, by its proto-loader (camelCase) name. */
const call = <T = Record<string, unknown>>(
  client: PricingClient,
  method: string,
  request: object,
): Promise<T> =>
  new Promise((resolve, reject) => {
    const rpc = (client as unknown as Record<string, Unary>)[method];
    if (!rpc) throw new Error(`no RPC ${method}`);
    rpc.call(client, request, (error, response) => (error ? reject(error) : resolve(response as T)));
  });

const failure = async (promise: Promise<unknown>): Promise<{ code: status; details: string }> => {
  try {
    await promise;
  } catch (error) {
    const { code, details } = error as ServiceError;
    return { code, details };
  }
  throw new Error('the call succeeded');
};

let a: PricingClient;
let b: PricingClient;

beforeAll(async () => {
  [a, b] = await Promise.all([startPricing('pricing-a'), startPricing('pricing-b')]);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(processes.map((p) => p.kill()));
});

describe('the catalogue over gRPC', () => {
  it('lists the shipped models with their prices, windows and catalogue version', async () => {
    const { models } = await call<{ models: Price[] }>(a, 'listModels', {});
    const gpt4o = models.find((m) => m.model === 'openai:gpt-4o');
    expect(gpt4o).toMatchObject({
      inputUsdPerMtok: 2.5,
      outputUsdPerMtok: 10,
      cacheReadUsdPerMtok: 1.25,
      contextWindowTokens: 128_000,
      effectiveFrom: '',
      source: expect.stringMatching(/^catalogue \d{4}-\d{2}-\d{2}\.\d+$/),
    });
    expect(models.find((m) => m.model === 'demo:keel-demo')).toMatchObject({
      inputUsdPerMtok: 0,
      outputUsdPerMtok: 0,
    });
    expect(models.map((m) => m.model)).toEqual(
      [...models.map((m) => m.model)].sort((x, y) => x.localeCompare(y)),
    );
  });

  it('answers a provider or gateway spelling of a model with its catalogue price', async () => {
    const { price } = await call<{ price: Price }>(a, 'getPrice', {
      model: 'us.anthropic.claude-3-5-sonnet-20241022-v2:0',
    });
    expect(price).toMatchObject({
      model: 'anthropic:claude-3-5-sonnet',
      inputUsdPerMtok: 3,
      outputUsdPerMtok: 15,
      cacheReadUsdPerMtok: 0.3,
      cacheWriteUsdPerMtok: 3.75,
      contextWindowTokens: 200_000,
    });
  });

  it('GetPrice of an unknown model (or a variant not in the catalogue) is NOT_FOUND', async () => {
    expect(await failure(call(a, 'getPrice', { model: 'openai:gpt-9' }))).toMatchObject({
      code: status.NOT_FOUND,
      details: expect.stringContaining('unknown model openai:gpt-9'),
    });
    expect((await failure(call(a, 'getPrice', { model: 'anthropic/claude-sonnet-4:thinking' }))).code).toBe(
      status.NOT_FOUND,
    );
  });

  it('ComputeCost prices input, cache reads, cache writes and output each at their price', async () => {
    const answer = await call(a, 'computeCost', {
      model: 'claude-3.5-sonnet',
      inputTokens: 1000,
      outputTokens: 500,
      cacheReadTokens: 4000,
      cacheWriteTokens: 200,
    });
    expect(answer).toMatchObject({
      costUsd: 0.01245,
      reason: '',
      price: { model: 'anthropic:claude-3-5-sonnet' },
    });
  });

  it('ComputeCost of an unknown model has no cost and says why: never a silent 0', async () => {
    const answer = await call<{ costUsd?: number; reason: string }>(a, 'computeCost', {
      model: 'openai:gpt-9',
      inputTokens: 10,
    });
    expect(answer.costUsd ?? null).toBeNull();
    expect(answer.reason).toContain('unknown model openai:gpt-9');
  });

  it.each([
    [{ model: 'gpt-4o', inputTokens: -1 }, 'inputTokens'],
    [{ model: 'gpt-4o', cacheReadTokens: -3 }, 'cacheReadTokens'],
    [{ model: 'gpt-4o', at: 'last tuesday' }, 'at'],
    [{ model: '' }, 'model'],
  ])('ComputeCost with bad input is INVALID_ARGUMENT naming the field (%#)', async (request, field) => {
    const { code, details } = await failure(call(a, 'computeCost', request));
    expect(code).toBe(status.INVALID_ARGUMENT);
    expect(details.startsWith(field)).toBe(true);
  });
});

describe('operator overrides', () => {
  it('apply from their instant, on every instance, and are rebuilt from the log by a new one', async () => {
    const effectiveFrom = new Date(Date.now() + 10_000).toISOString();
    const before = new Date(Date.parse(effectiveFrom) - 1).toISOString();
    const after = new Date(Date.parse(effectiveFrom) + 1).toISOString();
    const { price } = await call<{ price: Price }>(a, 'setPrice', {
      model: 'openai/gpt-4o-mini',
      inputUsdPerMtok: 0.1,
      outputUsdPerMtok: 0.4,
      cacheReadUsdPerMtok: 0.05,
      effectiveFrom,
      reason: 'contract rate',
      actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
      correlationId: 'req-price-1',
    });
    expect(price).toMatchObject({
      model: 'openai:gpt-4o-mini',
      inputUsdPerMtok: 0.1,
      contextWindowTokens: 128_000,
      effectiveFrom,
      source: 'override: contract rate',
    });
    const cost = async (client: PricingClient, at: string) =>
      (
        await call<{ costUsd?: number }>(client, 'computeCost', {
          model: 'gpt-4o-mini-2024-07-18',
          inputTokens: 1_000_000,
          at,
        })
      ).costUsd;
    for (const client of [a, b]) {
      expect(await cost(client, before)).toBe(0.15);
      expect(await cost(client, after)).toBe(0.1);
    }
    const c = await startPricing('pricing-c');
    expect(await cost(c, before)).toBe(0.15);
    expect(await cost(c, after)).toBe(0.1);

    const store = await MongoEventStore.connect(mongoUrl);
    try {
      const events = await store.read('keel', 'pricing-catalogue');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        type: 'PriceSet',
        data: { key: 'openai:gpt-4o-mini', inputUsdPerMtok: 0.1, effectiveFrom, reason: 'contract rate' },
        metadata: { actor: { keyId: 'operator' }, correlationId: 'req-price-1' },
      });
    } finally {
      await store.close();
    }
  });

  it.each([
    [{ effectiveFrom: '2020-01-01T00:00:00Z' }, 'effectiveFrom'],
    [{ inputUsdPerMtok: -1 }, 'inputUsdPerMtok'],
    [{ model: 'llama3' }, 'model'],
  ])(
    'a bad override is INVALID_ARGUMENT naming the field, and changes nothing (%#)',
    async (change, field) => {
      const { code, details } = await failure(
        call(b, 'setPrice', { model: 'gpt-4o', inputUsdPerMtok: 1, outputUsdPerMtok: 2, ...change }),
      );
      expect(code).toBe(status.INVALID_ARGUMENT);
      expect(details.startsWith(field)).toBe(true);
      const { price } = await call<{ price: Price }>(b, 'getPrice', { model: 'gpt-4o' });
      expect(price.inputUsdPerMtok).toBe(2.5);
    },
  );
});
