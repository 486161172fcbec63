// `grpcServices`: a service's own proto package is served next to health and reflection.
import type { ServiceClientConstructor } from '@grpc/grpc-js';
import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { freePort, startProcess } from '@keel/testkit';
import { describe, expect, it } from 'vitest';
import { PROTO_LOADER_OPTIONS, protoRoot } from './grpc-server.js';
import { healthCheck, reflectedServices } from './testing/index.js';

interface PricingClient {
  listModels(request: object, callback: (error: Error | null, response?: unknown) => void): void;
  close(): void;
}

describe('a service with grpcServices', () => {
  it('serves its package through the Nest controller and reports it in health and reflection', async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const handle = await startProcess({
      name: 'pricing-stub',
      entry: 'packages/runtime/test/fixtures/pricing-stub-service.ts',
      env: { MONGODB_URL: '', NATS_URL: '', GRPC_PORT: String(port) },
      readyLine: /"msg":"ready"/,
    });

    expect(await reflectedServices(address)).toEqual([
      'grpc.health.v1.Health',
      'keel.pricing.v1.PricingService',
    ]);
    expect(await healthCheck(address, 'keel.pricing.v1.PricingService')).toBe('SERVING');
    expect(await healthCheck(address, 'pricing')).toBe('SERVING');

    const definition = loadSync('keel/pricing/v1/pricing.proto', {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const root = loadPackageDefinition(definition) as unknown as {
      keel: { pricing: { v1: { PricingService: ServiceClientConstructor } } };
    };
    const client = new root.keel.pricing.v1.PricingService(
      address,
      credentials.createInsecure(),
    ) as unknown as PricingClient;
    const response = await new Promise((resolve, reject) =>
      client.listModels({}, (error, value) => (error ? reject(error) : resolve(value))),
    );
    client.close();
    expect(response).toMatchObject({
      models: [{ model: 'openai:gpt-4o-mini', inputUsdPerMtok: 0.15, contextWindowTokens: 128_000 }],
    });

    expect(await handle.kill('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
