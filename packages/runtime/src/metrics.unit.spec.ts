import { EventEmitter } from 'node:events';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
} from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import { describe, expect, it } from 'vitest';
import type { HookableHttp } from './metered-edges.js';
import { meterHttp, meteredBus, meteredStore, serveMetrics } from './metered-edges.js';
import { ServiceMetrics, createMetricsRegistry, processMetrics } from './metrics.js';

/** The value of one sample in the registry's text, or undefined when the series is absent. */
const sample = async (
  registry: ReturnType<typeof createMetricsRegistry>,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> => {
  const text = await registry.metrics();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(/,(?=[a-zA-Z_]+=")/);
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return undefined;
};

describe('metrics', () => {
  it('keeps each service of one registry under its own service label', async () => {
    const registry = createMetricsRegistry();
    const agent = new ServiceMetrics(registry, 'agent');
    const tools = new ServiceMetrics(registry, 'tools');
    agent.turnStarted();
    agent.turnFinished('completed', 1.5);
    agent.turnFinished('cancelled', undefined);
    agent.modelUsage('openai:gpt-4o', { promptTokens: 100, completionTokens: 20, cacheReadTokens: 0 }, 0.25);
    agent.modelUsage('openai:gpt-4o', { promptTokens: 10, completionTokens: 2 }, null);
    tools.toolCall('webhook', 'error', 0.2);

    expect(await sample(registry, 'keel_turns_started_total', { service: 'agent' })).toBe(1);
    expect(await sample(registry, 'keel_turns_started_total', { service: 'tools' })).toBeUndefined();
    expect(
      await sample(registry, 'keel_turns_finished_total', { service: 'agent', outcome: 'cancelled' }),
    ).toBe(1);
    // Only turns whose start was seen are timed.
    expect(
      await sample(registry, 'keel_turn_duration_seconds_count', { service: 'agent', outcome: 'completed' }),
    ).toBe(1);
    expect(
      await sample(registry, 'keel_turn_duration_seconds_count', { service: 'agent', outcome: 'cancelled' }),
    ).toBeUndefined();
    const model = { service: 'agent', model: 'openai:gpt-4o' };
    expect(await sample(registry, 'keel_model_tokens_total', { ...model, kind: 'prompt' })).toBe(110);
    expect(await sample(registry, 'keel_model_tokens_total', { ...model, kind: 'completion' })).toBe(22);
    expect(
      await sample(registry, 'keel_model_tokens_total', { ...model, kind: 'cache_read' }),
    ).toBeUndefined();
    expect(await sample(registry, 'keel_model_cost_usd_total', model)).toBe(0.25);
    expect(await sample(registry, 'keel_model_calls_unpriced_total', model)).toBe(1);
    expect(
      await sample(registry, 'keel_tool_call_duration_seconds_count', {
        service: 'tools',
        kind: 'webhook',
        outcome: 'error',
      }),
    ).toBe(1);
    // Prometheus conventions: histograms in seconds, counters end in _total.
    const text = await registry.metrics();
    expect(text).toMatch(/^# TYPE keel_turn_duration_seconds histogram$/m);
    expect(text).toMatch(/^# TYPE keel_turns_started_total counter$/m);
  });

  it('counts cost per tenant under the service that projects it', async () => {
    const registry = createMetricsRegistry();
    const audit = new ServiceMetrics(registry, 'audit');
    audit.tenantCost('tn_a', 0.25);
    audit.tenantCost('tn_a', 0.5);
    audit.tenantCost('tn_b', 1);
    expect(await sample(registry, 'keel_tenant_cost_usd_total', { service: 'audit', tenant: 'tn_a' })).toBe(
      0.75,
    );
    expect(await sample(registry, 'keel_tenant_cost_usd_total', { service: 'audit', tenant: 'tn_b' })).toBe(
      1,
    );
  });

  it('times appends of a store as the service’s, and the store stays what it was', async () => {
    const registry = createMetricsRegistry();
    const inner = new InMemoryEventStore();
    const store = meteredStore(inner, new ServiceMetrics(registry, 'agent'));
    expect(store).toBeInstanceOf(InMemoryEventStore);
    await store.append('acme', 'order-1', [
      { type: 'Placed', data: {} },
      { type: 'Paid', data: {} },
    ]);
    await expect(
      store.append('acme', 'order-1', [{ type: 'Shipped', data: {} }], { expectedVersion: 0 }),
    ).rejects.toThrow();
    expect(store.appendCount).toBe(inner.appendCount);
    expect(await store.streamVersion('acme', 'order-1')).toBe(2);
    expect(await sample(registry, 'keel_events_appended_total', { service: 'agent' })).toBe(2);
    const ok = { service: 'agent', outcome: 'ok' };
    expect(await sample(registry, 'keel_event_store_append_duration_seconds_count', ok)).toBe(1);
    expect(
      await sample(registry, 'keel_event_store_append_duration_seconds_count', {
        service: 'agent',
        outcome: 'error',
      }),
    ).toBe(1);
  });

  it('counts a consumer’s deliveries, redeliveries and dead letters, and reads its pending events', async () => {
    const registry = createMetricsRegistry();
    const quiet = { warn: () => undefined, error: () => undefined };
    const inner = new InMemoryEventBus({ logger: quiet });
    const bus = meteredBus(inner, new ServiceMetrics(registry, 'audit'));
    const store = new InMemoryEventStore();
    await store.append('acme', 'order-1', [{ type: 'Placed', data: {} }]);
    await store.append('acme', 'order-2', [{ type: 'Placed', data: {} }]);
    await inner.publish((await store.readAll({ scope: 'all-tenants' })).events);
    const consumer = { service: 'audit', consumer: 'projection' };
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const running = await bus.consume(
      { name: 'projection', maxDeliver: 2, backoffMs: [10] },
      async ({ event }) => {
        if (event.streamName === 'order-1') throw new Error('cannot handle it');
        await held;
      },
    );
    // Present from the start, at 0.
    expect(await sample(registry, 'keel_consumer_dead_letters_total', consumer)).toBe(0);
    await eventuallyTrue(async () => (await inner.deadLetters.list()).length === 1);
    // order-2 is in flight: pending until its handler returns.
    expect(await sample(registry, 'keel_consumer_pending_events', consumer)).toBe(1);
    release();
    await eventuallyTrue(
      async () => (await sample(registry, 'keel_consumer_pending_events', consumer)) === 0,
    );
    expect(await sample(registry, 'keel_consumer_redeliveries_total', consumer)).toBe(1);
    expect(await sample(registry, 'keel_consumer_dead_letters_total', consumer)).toBe(1);
    expect(await sample(registry, 'keel_consumer_deliveries_total', { ...consumer, outcome: 'retry' })).toBe(
      1,
    );
    expect(
      await sample(registry, 'keel_consumer_deliveries_total', { ...consumer, outcome: 'dead-lettered' }),
    ).toBe(1);
    expect(
      await sample(registry, 'keel_consumer_deliveries_total', { ...consumer, outcome: 'handled' }),
    ).toBe(1);
    await running.stop();
    // A stopped consumer's pending count is no longer read.
    expect(await sample(registry, 'keel_consumer_pending_events', consumer)).toBeUndefined();
    await inner.close();
  });

  it('labels HTTP requests with the route template, never the URL', async () => {
    const registry = createMetricsRegistry();
    let hook: Parameters<HookableHttp['addHook']>[1] | undefined;
    meterHttp({ addHook: (_name, added) => (hook = added) }, new ServiceMetrics(registry, 'gateway'));
    const request = (method: string, route: string | undefined, status: number): void => {
      const raw = Object.assign(new EventEmitter(), { statusCode: status });
      hook!({ method, ...(route ? { routeOptions: { url: route } } : { routeOptions: {} }) }, { raw }, () => {
        raw.emit('close');
      });
    };
    request('GET', '/v1/conversations/:id', 200);
    request('GET', '/v1/conversations/:id', 200);
    request('GET', undefined, 404);
    expect(
      await sample(registry, 'keel_http_request_duration_seconds_count', {
        service: 'gateway',
        method: 'GET',
        route: '/v1/conversations/:id',
        status: '200',
      }),
    ).toBe(2);
    expect(
      await sample(registry, 'keel_http_request_duration_seconds_count', {
        route: 'unmatched',
        status: '404',
      }),
    ).toBe(1);
  });

  it('reports the outbox relay as the process’s: published events, publish delay and lag', async () => {
    const registry = createMetricsRegistry();
    const store = new InMemoryEventStore();
    const relay = new OutboxRelay({
      store,
      bus: new InMemoryEventBus(),
      checkpoints: new InMemoryCheckpointStore(),
      leases: new InMemoryLeaseStore(),
      idleMs: 10,
    });
    processMetrics(registry, 'dev', relay);
    await store.append('acme', 'order-1', [{ type: 'Placed', data: {} }]);
    relay.start();
    await eventuallyTrue(() => relay.stats.published === 1);
    expect(await sample(registry, 'keel_outbox_published_events_total', { service: 'dev' })).toBe(1);
    expect(await sample(registry, 'keel_outbox_publish_delay_seconds_count', { service: 'dev' })).toBe(1);
    expect(await sample(registry, 'keel_outbox_lag_seconds', { service: 'dev' })).toBe(0);
    expect(await sample(registry, 'process_cpu_user_seconds_total', { service: 'dev' })).toBeGreaterThan(0);
    await relay.stop();
  });

  it('serves GET /metrics alone on METRICS_PORT, and names the variable when the port is taken', async () => {
    const registry = createMetricsRegistry();
    new ServiceMetrics(registry, 'tools').toolCall('builtin', 'ok', 0.01);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    await expect(serveMetrics(registry, '127.0.0.1', port)).rejects.toThrow(
      `METRICS_PORT ${port} is in use on 127.0.0.1: choose a free port`,
    );
    await new Promise<void>((resolve) => taken.close(() => resolve()));

    const server = await serveMetrics(registry, '127.0.0.1', 0);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toBe(registry.contentType);
      expect(await metrics.text()).toContain(
        'keel_tool_call_duration_seconds_count{service="tools",kind="builtin",outcome="ok"} 1',
      );
      expect((await fetch(`${base}/`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(404);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
