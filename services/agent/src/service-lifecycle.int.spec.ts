// The five services as separate processes on real NATS and MongoDB: they start, report health
// over gRPC, describe themselves through reflection, and stop cleanly on SIGTERM.
import type { RecordedEvent } from '@keel/core';
import { InMemoryDeadLetters, InMemoryInbox } from '@keel/core';
import { MongoCheckpointStore, MongoEventStore } from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthCheck, reflectedServices } from '@keel/runtime/testing';

const SERVICES = ['gateway', 'agent', 'tools', 'audit', 'pricing'] as const;
type Service = (typeof SERVICES)[number];

const SHUTDOWN_TIMEOUT_MS = 8_000;
const SHUTDOWN_STEPS = [
  'signal',
  'not-serving',
  'grpc-stopped',
  'app-closed',
  'consumers-drained',
  'outbox-flushed',
  'connections-closed',
  'exit',
];

interface Started {
  handle: ProcessHandle;
  grpcAddress: string;
}

const { natsUrl, mongoUrl: baseMongoUrl } = testInfra();
const mongoUrl = mongoUrlFor(uniqueName('svc'), baseMongoUrl);
const stream = uniqueName('SVC');
const subjectPrefix = `test.${uniqueName('svc')}`;
const started = new Map<Service, Started>();
let httpPort = 0;

const jsonLines = (handle: ProcessHandle): Record<string, unknown>[] =>
  handle.stdoutLines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

const service = (name: Service): Started => {
  const found = started.get(name);
  if (!found) throw new Error(`${name} did not start`);
  return found;
};

beforeAll(async () => {
  httpPort = await freePort();
  const ports = await Promise.all(SERVICES.map(() => freePort()));
  await Promise.all(
    SERVICES.map(async (name, index) => {
      const grpcPort = ports[index] ?? 0;
      const handle = await startProcess({
        name,
        entry: `services/${name}/src/main.ts`,
        env: {
          MONGODB_URL: mongoUrl,
          NATS_URL: natsUrl,
          KEEL_NATS_STREAM: stream,
          KEEL_SUBJECT_PREFIX: subjectPrefix,
          GRPC_PORT: String(grpcPort),
          PORT: String(httpPort),
          HOST: '127.0.0.1',
          SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
          LOG_LEVEL: 'info',
        },
        readyLine: /"msg":"ready"/,
        readyTimeoutMs: 60_000,
      });
      started.set(name, { handle, grpcAddress: `127.0.0.1:${grpcPort}` });
    }),
  );
});

describe('a Keel service process', () => {
  it('prints one ready line naming its gRPC address and the MongoDB store and NATS bus', () => {
    for (const name of SERVICES) {
      const { handle, grpcAddress } = service(name);
      const ready = jsonLines(handle).filter((line) => line.msg === 'ready');
      expect(ready).toEqual([
        expect.objectContaining({ service: name, grpcAddress, store: 'mongodb', bus: 'nats' }),
      ]);
    }
  });

  it('answers grpc.health.v1 Check with SERVING for the server and for its own name', async () => {
    for (const name of SERVICES) {
      const { grpcAddress } = service(name);
      expect(await healthCheck(grpcAddress, '')).toBe('SERVING');
      expect(await healthCheck(grpcAddress, name)).toBe('SERVING');
      await expect(healthCheck(grpcAddress, 'keel.nothing.v1.Nothing')).rejects.toMatchObject({ code: 5 }); // NOT_FOUND
    }
  });

  it('lists the services it serves through gRPC reflection', async () => {
    for (const name of SERVICES) {
      // Every service serves its own contracts beside health; the gateway re-serves the public ones.
      const own: Record<Service, string[]> = {
        gateway: [
          'keel.conversations.v1.ConversationService',
          'keel.operator.v1.OperatorService',
          'keel.pricing.v1.PricingService',
          'keel.usage.v1.UsageService',
        ],
        agent: [
          'keel.agent.v1.AgentService',
          'keel.hooks.v1.HookService',
          'keel.mcp.v1.McpService',
          'keel.models.v1.ModelsService',
          'keel.run.v1.RunService',
        ],
        tools: [],
        audit: ['keel.audit.v1.AuditService', 'keel.usage.v1.UsageService'],
        pricing: ['keel.pricing.v1.PricingService'],
      };
      expect(await reflectedServices(service(name).grpcAddress)).toEqual(
        ['grpc.health.v1.Health', ...own[name]].sort(),
      );
    }
  });

  it('serves /healthz, /readyz and /metrics on the gateway', async () => {
    const base = `http://127.0.0.1:${httpPort}`;
    const healthz = await fetch(`${base}/healthz`);
    expect(healthz.status).toBe(200);
    expect(await healthz.json()).toEqual({ status: 'ok' });

    const readyz = await fetch(`${base}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toEqual({ status: 'ok' });

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await metrics.text();
    expect(text).toMatch(/^keel_outbox_published_events_total\{service="gateway"\} \d+$/m);
    expect(text).toMatch(/^keel_outbox_position\{service="gateway"\} \d+$/m);
    expect(text).toMatch(/^keel_outbox_lease_held\{service="gateway"\} [01]$/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total\{service="gateway"\} /m);
  });

  it('on SIGTERM publishes what was committed, stops in order within the timeout and exits 0', async () => {
    // Commit events straight to the log the services share, then stop every process at once.
    const store = await MongoEventStore.connect(mongoUrl);
    const appended = await store.append(
      'acme',
      'lifecycle-probe',
      Array.from({ length: 20 }, (_, i) => ({ type: 'Probed', data: { i } })),
    );
    const stopping = SERVICES.map(async (name) => {
      const startedAt = Date.now();
      const exit = await service(name).handle.kill('SIGTERM', SHUTDOWN_TIMEOUT_MS + 5_000);
      return { name, exit, ms: Date.now() - startedAt };
    });
    const stopped = await Promise.all(stopping);

    for (const { name, exit, ms } of stopped) {
      const { handle } = service(name);
      expect(exit, `${name} exit\n${handle.tail()}`).toEqual({ code: 0, signal: null });
      expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      const steps = jsonLines(handle)
        .map((line) => line.step)
        .filter((step): step is string => typeof step === 'string');
      expect(steps, `${name} shutdown steps`).toEqual(SHUTDOWN_STEPS);
    }

    // Every committed event was published before the processes let go: the checkpoint covers
    // them, and a fresh consumer finds each one on JetStream.
    const lastPosition = (await store.read('acme', 'lifecycle-probe')).reduce(
      (max, event) => Math.max(max, event.globalPosition ?? 0),
      0,
    );
    expect(lastPosition).toBeGreaterThan(0);
    expect(await new MongoCheckpointStore(store.db).load('outbox')).toBeGreaterThanOrEqual(lastPosition);
    const flushed = SERVICES.flatMap((name) =>
      jsonLines(service(name).handle).filter((line) => line.step === 'outbox-flushed'),
    );
    expect(flushed.reduce((sum, line) => sum + Number(line.published), 0)).toBeGreaterThanOrEqual(
      appended.events.length,
    );

    const bus = await NatsEventBus.connect({
      servers: natsUrl,
      streamName: stream,
      subjectPrefix,
      inbox: new InMemoryInbox(),
      deadLetters: new InMemoryDeadLetters(),
    });
    const received = new Set<string>();
    const consumer = await bus.consume(
      { name: uniqueName('check'), idempotency: 'none', maxInFlight: 100 },
      async ({ event }: { event: RecordedEvent }) => {
        received.add(event.eventId);
      },
    );
    try {
      await eventually(
        () => expect([...received].sort()).toEqual(appended.events.map((event) => event.eventId).sort()),
        { timeoutMs: 10_000 },
      );
    } finally {
      await consumer.stop();
      await bus.close();
      await store.close();
    }
  });
});

afterAll(async () => {
  await Promise.all([...started.values()].map(({ handle }) => handle.kill('SIGKILL')));
});
