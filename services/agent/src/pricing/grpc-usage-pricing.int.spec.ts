// The agent's pricing client against a stub keel.pricing.v1.PricingService on a real gRPC
// server: the request it sends (uncached input = prompt − cache reads − cache writes), the cost
// and window it reads back, retries when the service is unavailable, and an unpriced answer with
// its reason when pricing cannot answer: never a thrown error, never a made-up 0.
import type { sendUnaryData, ServerUnaryCall, ServiceDefinition } from '@grpc/grpc-js';
import { Server, ServerCredentials, status } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { PROTO_LOADER_OPTIONS, protoRoot } from '@keel/runtime';
import { freePort } from '@keel/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GrpcUsagePricing, pricingAddressFromEnv } from './grpc-usage-pricing.js';

type Handler = (request: Record<string, unknown>) => Promise<object> | object;

let server: Server;
let address: string;
let handler: Handler;
const requests: Array<Record<string, unknown>> = [];
const clients: GrpcUsagePricing[] = [];

const client = (options = {}) => {
  const pricing = new GrpcUsagePricing(address, { backoffMs: 10, ...options });
  clients.push(pricing);
  return pricing;
};

const usage = {
  model: 'anthropic:claude-3-5-sonnet-20241022',
  promptTokens: 1200,
  completionTokens: 80,
  cacheReadTokens: 1000,
  cacheWriteTokens: 50,
  at: '2026-03-01T12:00:00.000Z',
};

const serviceDefinition = () =>
  loadSync('keel/pricing/v1/pricing.proto', { ...PROTO_LOADER_OPTIONS, includeDirs: [protoRoot()] })[
    'keel.pricing.v1.PricingService'
  ] as ServiceDefinition;

beforeAll(async () => {
  server = new Server();
  server.addService(serviceDefinition(), {
    ComputeCost: (
      call: ServerUnaryCall<Record<string, unknown>, object>,
      callback: sendUnaryData<object>,
    ) => {
      requests.push(call.request);
      Promise.resolve()
        .then(() => handler(call.request))
        .then(
          (response) => callback(null, response),
          (error: { code: number; details: string }) => callback(error),
        );
    },
  });
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(address, ServerCredentials.createInsecure(), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
});

afterEach(() => {
  requests.length = 0;
  for (const pricing of clients.splice(0)) pricing.close();
});

afterAll(() => server.forceShutdown());

describe('GrpcUsagePricing', () => {
  it('asks ComputeCost with the uncached input, the cache tokens and the instant, and reads the cost and window', async () => {
    handler = () => ({
      costUsd: 0.0017,
      reason: '',
      price: { model: 'anthropic:claude-3-5-sonnet', contextWindowTokens: 200_000 },
    });
    expect(await client().price(usage)).toEqual({ costUsd: 0.0017, windowTokens: 200_000 });
    expect(requests).toEqual([
      expect.objectContaining({
        model: 'anthropic:claude-3-5-sonnet-20241022',
        inputTokens: 150,
        outputTokens: 80,
        cacheReadTokens: 1000,
        cacheWriteTokens: 50,
        at: '2026-03-01T12:00:00.000Z',
      }),
    ]);
  });

  it('keeps a cost of 0 (a local model) as 0, not as unknown', async () => {
    handler = () => ({ costUsd: 0, reason: '', price: { model: 'ollama:*', contextWindowTokens: 0 } });
    expect(await client().price({ ...usage, model: 'ollama:llama3.1:8b' })).toEqual({
      costUsd: 0,
      windowTokens: null,
    });
  });

  it('an unknown model is null with the service’s reason', async () => {
    handler = () => ({ reason: 'unknown model openai:gpt-9: not in the price catalogue' });
    expect(await client().price({ ...usage, model: 'openai:gpt-9' })).toEqual({
      costUsd: null,
      reason: 'unknown model openai:gpt-9: not in the price catalogue',
      windowTokens: null,
    });
  });

  it('retries a call that found the service unavailable', async () => {
    let calls = 0;
    handler = () => {
      calls++;
      if (calls === 1) throw { code: status.UNAVAILABLE, details: 'restarting' };
      return { costUsd: 0.5, reason: '', price: { contextWindowTokens: 128_000 } };
    };
    expect(await client().price(usage)).toEqual({ costUsd: 0.5, windowTokens: 128_000 });
    expect(calls).toBe(2);
  });

  it('does not retry a refused request, and answers null with the status', async () => {
    handler = () => {
      throw { code: status.INVALID_ARGUMENT, details: 'at must be an RFC 3339 instant' };
    };
    const priced = await client().price(usage);
    expect(priced).toMatchObject({ costUsd: null, windowTokens: null });
    expect(priced.reason).toContain('INVALID_ARGUMENT');
    expect(requests).toHaveLength(1);
  });

  it('gives up after its attempts when every call misses the deadline', async () => {
    handler = () => new Promise((resolve) => setTimeout(() => resolve({ costUsd: 1 }), 1_000));
    const started = Date.now();
    const priced = await client({ deadlineMs: 100, attempts: 2 }).price(usage);
    expect(priced).toMatchObject({ costUsd: null, reason: expect.stringContaining('DEADLINE_EXCEEDED') });
    expect(Date.now() - started).toBeLessThan(900);
    expect(requests).toHaveLength(2);
  });

  it('answers null with the reason when nothing listens at the address, within its attempts’ deadlines', async () => {
    const pricing = new GrpcUsagePricing(`127.0.0.1:${await freePort()}`, {
      attempts: 2,
      reconnectWaitMs: 200,
    });
    clients.push(pricing);
    const started = Date.now();
    const priced = await pricing.price(usage);
    expect(priced).toMatchObject({ costUsd: null, reason: expect.stringContaining('pricing unavailable') });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('reaches a service that starts listening while a call waits for the channel to reconnect', async () => {
    const port = await freePort();
    const pricing = new GrpcUsagePricing(`127.0.0.1:${port}`, { attempts: 2, reconnectWaitMs: 3_000 });
    clients.push(pricing);
    const answer = pricing.price(usage);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = new Server();
    late.addService(serviceDefinition(), {
      ComputeCost: (_call: ServerUnaryCall<object, object>, callback: sendUnaryData<object>) =>
        callback(null, { costUsd: 0.25, reason: '', price: { contextWindowTokens: 1_000 } }),
    });
    await new Promise<void>((resolve, reject) =>
      late.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    try {
      expect(await answer).toEqual({ costUsd: 0.25, windowTokens: 1_000 });
    } finally {
      late.forceShutdown();
    }
  });
});

describe('GrpcUsagePricing across restarts of the pricing service', () => {
  const listen = async (port: number): Promise<Server> => {
    const restarted = new Server();
    restarted.addService(serviceDefinition(), {
      ComputeCost: (_call: ServerUnaryCall<object, object>, callback: sendUnaryData<object>) =>
        callback(null, { costUsd: 0.12, reason: '' }),
    });
    await new Promise<void>((resolve, reject) =>
      restarted.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
    return restarted;
  };

  it('prices the first call after the service is back, however long it was down (the channel retries within the wait)', async () => {
    const port = await freePort();
    let up = await listen(port);
    const pricing = new GrpcUsagePricing(`127.0.0.1:${port}`);
    clients.push(pricing);
    try {
      // Down long enough for the channel's reconnect backoff to reach its cap, back at a
      // different point of the channel's schedule each time.
      for (const downMs of [1_300, 1_700]) {
        expect((await pricing.price(usage)).costUsd).toBe(0.12);
        up.forceShutdown();
        expect((await pricing.price(usage)).costUsd).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, downMs));
        up = await listen(port);
        expect(await pricing.price(usage), `back after ${downMs} ms down`).toMatchObject({ costUsd: 0.12 });
      }
    } finally {
      up.forceShutdown();
    }
  }, 20_000);
});

describe('pricingAddressFromEnv', () => {
  it('is PRICING_GRPC_URL, else this host on PRICING_GRPC_PORT, else the pricing default port', () => {
    expect(pricingAddressFromEnv({ PRICING_GRPC_URL: 'pricing:7000', PRICING_GRPC_PORT: '9' })).toBe(
      'pricing:7000',
    );
    expect(pricingAddressFromEnv({ PRICING_GRPC_PORT: '6055' })).toBe('127.0.0.1:6055');
    expect(pricingAddressFromEnv({})).toBe('127.0.0.1:50055');
  });
});
