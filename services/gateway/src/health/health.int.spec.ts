// The gateway's probes on real MongoDB and NATS, in process, so the test can take the bus away.
import { bootstrapService, createInfrastructure, createLogger, loadConfig } from '@keel/runtime';
import type { RunningService } from '@keel/runtime';
import { freePort, mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayModule } from '../gateway.module.js';

let gateway: RunningService;
let base = '';

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const httpPort = await freePort();
  const config = loadConfig('gateway', {
    MONGODB_URL: mongoUrlFor(uniqueName('readyz'), mongoUrl),
    NATS_URL: natsUrl,
    KEEL_NATS_STREAM: uniqueName('READYZ'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('readyz')}`,
    GRPC_PORT: String(await freePort()),
    PORT: String(httpPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger('gateway', { level: 'silent' });
  const infrastructure = await createInfrastructure(config, logger);
  gateway = await bootstrapService({
    service: 'gateway',
    module: GatewayModule,
    httpAdapter: () => new FastifyAdapter(),
    config,
    logger,
    infrastructure,
    handleSignals: false,
  });
  base = `http://127.0.0.1:${httpPort}`;
});

afterAll(async () => {
  await gateway?.stop();
  await gateway?.infra.close();
});

describe('gateway probes', () => {
  it('/readyz is 200 while MongoDB and NATS answer', async () => {
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('/readyz is 503 problem+json naming the bus once NATS is gone, while /healthz stays 200', async () => {
    await gateway.infra.bus.close();
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ status: 503, code: 'unavailable', title: 'Service Unavailable' });
    expect(typeof problem.type).toBe('string');
    expect(problem.detail).toMatch(/bus \(nats\)/);
    expect(problem.detail).not.toMatch(/store/);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('/readyz names the store too once MongoDB is gone', async () => {
    await gateway.infra.store.close();
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect(((await response.json()) as { detail: string }).detail).toMatch(/store \(mongodb\).*bus \(nats\)/);
  });
});
