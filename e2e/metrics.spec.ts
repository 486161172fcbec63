// The metrics an operator scrapes, moving during one tool turn. Every service as its own process
// on NATS and FerretDB (the agent, tools, audit and pricing services each serve
// GET /metrics on METRICS_PORT; the gateway on its HTTP port), scraped before and after a turn
// whose model calls a built-in tool once and then answers. Then the dev mode (`npm start`): one
// process, one /metrics, each series under the service that produced it.
import type { FakeOpenAI, ProcessHandle, SseFrame } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  startFakeOpenAI,
  startProcess,
  uniqueName,
} from '@keel/testkit';
import { SERVICE_NAMES } from '@keel/runtime';
import { healthCheck } from '@keel/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayRequest, jsonOf, openTurnStream } from './support/http.js';
import {
  platformEnv,
  startAgent,
  startAudit,
  startGateway,
  startPricing,
  startTools,
} from './support/platform.js';

/** One sample of a Prometheus text exposition. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const parse = (text: string): Sample[] =>
  text.split('\n').flatMap((line) => {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) return [];
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    return [{ name: match[1]!, labels, value: Number(match[3]) }];
  });

/** The samples of `name` whose labels include `labels`. */
const matching = (samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] =>
  samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );

/** Their sum (0 when none). */
const total = (samples: Sample[], name: string, labels: Record<string, string> = {}): number =>
  matching(samples, name, labels).reduce((sum, s) => sum + s.value, 0);

const scrape = async (url: string): Promise<{ text: string; samples: Sample[] }> => {
  const response = await fetch(url);
  expect(response.status, url).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, samples: parse(text) };
};

const MODEL = 'openai:gpt-4o-mini';
const CALL_USAGE = { promptTokens: 120, completionTokens: 30 };
const ANSWER_USAGE = { promptTokens: 200, completionTokens: 12 };

describe('metrics of separate processes, scraped before and after one tool turn', () => {
  const env = platformEnv('metrics');
  const operatorKey = `op_${uniqueName('metrics')}`;
  let fake: FakeOpenAI;
  let processes: ProcessHandle[] = [];
  let base: string;
  let agentAddress: string;
  const urls: Record<string, string> = {};

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    // One at a time: ports handed out at once may be the same one.
    const ports: number[] = [];
    for (let i = 0; i < 9; i++) ports.push(await freePort());
    const [agentPort, auditPort, pricingPort, httpPort, grpcPort, ...more] = ports;
    const metricsPorts = { agent: more[0]!, tools: more[1]!, audit: more[2]!, pricing: more[3]! };
    const pricing = { PRICING_GRPC_URL: `127.0.0.1:${pricingPort}` };
    const own = (service: keyof typeof metricsPorts) => ({
      ...env,
      METRICS_PORT: String(metricsPorts[service]),
    });
    const started = await Promise.allSettled([
      startAgent({ ...own('agent'), ...pricing }, agentPort!, fake.url),
      startTools(own('tools')),
      startAudit(own('audit'), auditPort!),
      startPricing(own('pricing'), pricingPort!),
      startGateway(env, { port: httpPort!, grpcPort: grpcPort!, agentPort: agentPort! }, operatorKey, {
        extra: { ...pricing, AUDIT_GRPC_URL: `127.0.0.1:${auditPort}` },
      }),
    ]);
    processes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    base = `http://127.0.0.1:${httpPort}`;
    agentAddress = `127.0.0.1:${agentPort}`;
    urls.gateway = `${base}/metrics`;
    for (const [service, port] of Object.entries(metricsPorts))
      urls[service] = `http://127.0.0.1:${port}/metrics`;
  }, 120_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake?.close();
  });

  const scrapeAll = async () =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(urls).map(async ([service, url]) => [service, (await scrape(url)).samples] as const),
      ),
    ) as Record<'gateway' | 'agent' | 'tools' | 'audit' | 'pricing', Sample[]>;

  it('serves /metrics on each service, every keel_* series labelled with that service, and the series move by what one turn did', async () => {
    const request = (method: string, path: string, key: string, body?: unknown) =>
      gatewayRequest(base, method, path, key, body);
    const tenant = await request('POST', '/v1/tenants', operatorKey, { name: 'metrics' });
    expect(tenant.status).toBe(201);
    const tenantId = (await jsonOf(tenant)).id as string;
    const key = (
      await jsonOf(await request('POST', `/v1/tenants/${tenantId}/keys`, operatorKey, { role: 'admin' }))
    ).key as string;
    const agent = await request('PUT', '/v1/agents/calc', key, {
      model: MODEL,
      tools: ['calculator'],
      maxSteps: 3,
    });
    expect(agent.status, await agent.clone().text()).toBe(200);
    fake.on(
      lastUserMessageIncludes('METRICS-TURN'),
      fakeReply.toolCall('calculator', { expression: '6*7' }, { usage: CALL_USAGE }),
      fakeReply.text('It is 42.', { usage: ANSWER_USAGE }),
    );
    const created = await request('POST', '/v1/conversations', key, { agentId: 'calc' });
    expect(created.status).toBe(201);
    const conversationId = (await jsonOf(created)).id as string;

    // Before: every service answers, and each keel_* series carries the service that serves it.
    const before = await scrapeAll();
    for (const [service, samples] of Object.entries(before)) {
      const keel = samples.filter((s) => s.name.startsWith('keel_'));
      expect(keel.length, service).toBeGreaterThan(0);
      expect(new Set(keel.map((s) => s.labels.service)), service).toEqual(new Set([service]));
      expect(total(samples, 'process_cpu_user_seconds_total', { service }), service).toBeGreaterThan(0);
    }

    // One turn on the turn stream: while it is open the gateway counts one open SSE stream.
    const stream = await openTurnStream(base, key, conversationId, { content: 'METRICS-TURN what is 6*7?' });
    await stream.until((f) => f.event === 'turn.started', 30_000);
    const during = (await scrape(urls.gateway!)).samples;
    expect(total(during, 'keel_sse_streams_open', { service: 'gateway' })).toBe(1);
    const frames: SseFrame[] = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      60_000,
    );
    stream.close();
    expect(frames.at(-1)?.event).toBe('turn.completed');
    expect(frames.find((f) => f.event === 'tool.result')?.data).toMatchObject({ ok: true });
    const usage = frames.filter((f) => f.event === 'usage').map((f) => f.data as { costUsd: number | null });
    expect(usage).toHaveLength(2);
    const costUsd = usage.reduce((sum, u) => sum + (u.costUsd ?? 0), 0);
    expect(costUsd).toBeGreaterThan(0);

    // After: once the agent has seen TurnCompleted and the stream is closed.
    let after = before;
    const delta = (service: keyof typeof before, name: string, labels: Record<string, string> = {}) =>
      total(after[service], name, { service, ...labels }) -
      total(before[service], name, { service, ...labels });
    await eventually(
      async () => {
        after = await scrapeAll();
        expect(delta('agent', 'keel_turns_finished_total', { outcome: 'completed' })).toBe(1);
        expect(total(after.gateway, 'keel_sse_streams_open', { service: 'gateway' })).toBe(0);
        expect(
          delta('audit', 'keel_consumer_deliveries_total', { outcome: 'handled' }),
        ).toBeGreaterThanOrEqual(
          delta('agent', 'keel_events_appended_total') + delta('tools', 'keel_events_appended_total'),
        );
        // The relay publishes after the commit: its counter catches up a moment later.
        expect(
          (['gateway', 'agent', 'tools', 'audit', 'pricing'] as const).reduce(
            (sum, service) => sum + delta(service, 'keel_outbox_published_events_total'),
            0,
          ),
        ).toBeGreaterThanOrEqual(
          delta('agent', 'keel_events_appended_total') + delta('tools', 'keel_events_appended_total'),
        );
      },
      { timeoutMs: 30_000 },
    );

    // Gateway: HTTP by route template (never the URL with its ids), status and latency.
    const route = (path: string, method: string, status: string) => ({ route: path, method, status });
    expect(
      delta(
        'gateway',
        'keel_http_request_duration_seconds_count',
        route('/v1/conversations/:id/messages', 'POST', '200'),
      ),
    ).toBe(1);
    // The tenant's key was issued on a templated route too: its id is a parameter, not a label value.
    const routes = new Set(
      matching(after.gateway, 'keel_http_request_duration_seconds_count').map((s) => s.labels.route),
    );
    expect([...routes].filter((r) => /^\/v1\/tenants\/:\w+\/keys$/.test(r ?? ''))).toHaveLength(1);
    expect(
      delta('gateway', 'keel_http_request_duration_seconds_bucket', {
        ...route('/v1/conversations/:id/messages', 'POST', '200'),
        le: '+Inf',
      }),
    ).toBe(1);
    const gatewayText = await (await fetch(urls.gateway!)).text();
    expect(gatewayText).not.toContain(conversationId);
    expect(gatewayText).not.toContain(tenantId);

    // Agent: its gRPC calls from the gateway, by full method and code.
    expect(
      delta('agent', 'keel_grpc_server_duration_seconds_count', {
        method: '/keel.agent.v1.AgentService/SubmitMessage',
        code: 'OK',
      }),
    ).toBe(1);
    // Turns: started and completed, timed; first token; two model calls; tokens and cost by model.
    expect(delta('agent', 'keel_turns_started_total')).toBe(1);
    expect(delta('agent', 'keel_turn_duration_seconds_count', { outcome: 'completed' })).toBe(1);
    expect(delta('agent', 'keel_turns_finished_total', { outcome: 'failed' })).toBe(0);
    expect(delta('agent', 'keel_turn_time_to_first_token_seconds_count', { model: MODEL })).toBe(1);
    expect(delta('agent', 'keel_model_call_duration_seconds_count', { model: MODEL, outcome: 'ok' })).toBe(2);
    const tokens = (kind: string) => delta('agent', 'keel_model_tokens_total', { model: MODEL, kind });
    expect(tokens('prompt')).toBe(CALL_USAGE.promptTokens + ANSWER_USAGE.promptTokens);
    expect(tokens('completion')).toBe(CALL_USAGE.completionTokens + ANSWER_USAGE.completionTokens);
    expect(delta('agent', 'keel_model_cost_usd_total', { model: MODEL })).toBeCloseTo(costUsd, 9);
    // Its store appends and its consumers.
    expect(
      delta('agent', 'keel_event_store_append_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThan(0);
    expect(delta('agent', 'keel_events_appended_total')).toBeGreaterThanOrEqual(8);
    expect(delta('agent', 'keel_consumer_deliveries_total', { consumer: 'agent-turns' })).toBeGreaterThan(0);
    expect(matching(after.agent, 'keel_consumer_pending_events', { consumer: 'agent-turns' })).toHaveLength(
      1,
    );
    expect(matching(after.agent, 'keel_consumer_dead_letters_total', { consumer: 'agent-turns' })).toEqual([
      expect.objectContaining({ value: 0 }),
    ]);
    expect(
      matching(after.agent, 'keel_consumer_redeliveries_total', { consumer: 'agent-turns' }),
    ).toHaveLength(1);

    // Tools: the one call, by kind and outcome; its ToolCallExecuted append.
    expect(delta('tools', 'keel_tool_call_duration_seconds_count', { kind: 'builtin', outcome: 'ok' })).toBe(
      1,
    );
    expect(delta('tools', 'keel_events_appended_total')).toBe(1);
    expect(
      delta('tools', 'keel_consumer_deliveries_total', { consumer: 'tools', outcome: 'handled' }),
    ).toBeGreaterThan(0);

    // Calls no controller answers are timed too: health, and one refused with its code.
    expect(await healthCheck(agentAddress, 'agent')).toBe('SERVING');
    await expect(healthCheck(agentAddress, 'no.such.Service')).rejects.toThrow(/NOT_FOUND/);
    const health = (await scrape(urls.agent!)).samples;
    const checks = (code: string) =>
      total(health, 'keel_grpc_server_duration_seconds_count', {
        service: 'agent',
        method: '/grpc.health.v1.Health/Check',
        code,
      });
    expect(checks('OK')).toBeGreaterThanOrEqual(1);
    expect(checks('NOT_FOUND')).toBe(1);

    // Pricing: the agent priced both calls over gRPC.
    expect(
      delta('pricing', 'keel_grpc_server_duration_seconds_count', {
        method: '/keel.pricing.v1.PricingService/ComputeCost',
        code: 'OK',
      }),
    ).toBe(2);

    // Outbox: the lease holder published the turn's events; its lag is reported, small.
    const published = (['gateway', 'agent', 'tools', 'audit', 'pricing'] as const).reduce(
      (sum, service) => sum + delta(service, 'keel_outbox_published_events_total'),
      0,
    );
    expect(published).toBeGreaterThanOrEqual(
      delta('agent', 'keel_events_appended_total') + delta('tools', 'keel_events_appended_total'),
    );
    const holders = Object.values(after).flatMap((samples) =>
      matching(samples, 'keel_outbox_lease_held').filter((s) => s.value === 1),
    );
    expect(holders).toHaveLength(1);
    const lag = Object.values(after).flatMap((samples) => matching(samples, 'keel_outbox_lag_seconds'));
    expect(lag).toHaveLength(1);
    expect(lag[0]!.labels.service).toBe(holders[0]!.labels.service);
    expect(lag[0]!.value).toBeLessThan(30);
  });
});

describe('metrics in the dev mode (npm start: five services, one process, one /metrics)', () => {
  let dev: ProcessHandle | undefined;

  afterAll(async () => {
    await dev?.kill('SIGTERM');
  });

  it("the gateway's /metrics carries each service's series under its own service label after a turn", async () => {
    const httpPort = await freePort();
    const env: Record<string, string> = {
      MONGODB_URL: '',
      NATS_URL: '',
      PORT: String(httpPort),
      HOST: '127.0.0.1',
      GRPC_PORT: '',
      KEEL_DEV_KEY: '',
    };
    for (const service of SERVICE_NAMES) env[`${service.toUpperCase()}_GRPC_PORT`] = String(await freePort());
    dev = await startProcess({
      name: 'dev',
      entry: 'apps/dev/src/main.ts',
      env,
      readyLine: /^Ctrl-C stops it/,
      readyTimeoutMs: 60_000,
    });
    const key = /KEEL_KEY=(\S+)/.exec(dev.stderrLines.join('\n'))?.[1] ?? '';
    expect(key).toMatch(/^keel_/);
    const base = `http://127.0.0.1:${httpPort}`;
    const created = await gatewayRequest(base, 'POST', '/v1/conversations', key, { agentId: 'demo' });
    expect(created.status).toBe(201);
    const conversationId = (await jsonOf(created)).id as string;
    const stream = await openTurnStream(base, key, conversationId, { content: 'What is 6*7?' });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      60_000,
    );
    stream.close();
    expect(frames.at(-1)?.event).toBe('turn.completed');

    let samples: Sample[] = [];
    await eventually(
      async () => {
        samples = (await scrape(`${base}/metrics`)).samples;
        expect(total(samples, 'keel_turns_finished_total', { service: 'agent', outcome: 'completed' })).toBe(
          1,
        );
        // The audit projection catches up a moment after the events (it batches a turn's events).
        expect(
          total(samples, 'keel_consumer_deliveries_total', {
            service: 'audit',
            consumer: 'audit-projection',
          }),
        ).toBeGreaterThan(0);
      },
      { timeoutMs: 20_000 },
    );
    const services = new Set(samples.filter((s) => s.name.startsWith('keel_')).map((s) => s.labels.service));
    expect(services).toEqual(new Set(['gateway', 'agent', 'tools', 'audit', 'pricing', 'dev']));
    expect(
      total(samples, 'keel_http_request_duration_seconds_count', {
        service: 'gateway',
        route: '/v1/conversations/:id/messages',
      }),
    ).toBe(1);
    expect(total(samples, 'keel_turns_started_total', { service: 'agent' })).toBe(1);
    expect(total(samples, 'keel_turns_started_total', { service: 'gateway' })).toBe(0);
    expect(
      total(samples, 'keel_tool_call_duration_seconds_count', {
        service: 'tools',
        kind: 'builtin',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(total(samples, 'keel_events_appended_total', { service: 'tools' })).toBe(1);
    expect(
      total(samples, 'keel_consumer_deliveries_total', { service: 'audit', consumer: 'audit-projection' }),
    ).toBeGreaterThan(0);
    expect(
      total(samples, 'keel_grpc_server_duration_seconds_count', {
        service: 'pricing',
        method: '/keel.pricing.v1.PricingService/ComputeCost',
      }),
    ).toBe(2);
    // The process's own series (Node.js, the one outbox relay) belong to the process: service="dev".
    expect(total(samples, 'keel_outbox_published_events_total', { service: 'dev' })).toBeGreaterThan(0);
    expect(total(samples, 'process_cpu_user_seconds_total', { service: 'dev' })).toBeGreaterThan(0);
    expect(matching(samples, 'process_cpu_user_seconds_total', { service: 'gateway' })).toEqual([]);
  });
});
