/**
 * What a client sees of Keel's own hops, with the five services as separate processes on the
 * run's NATS and MongoDB (name the backend: FerretDB/PostgreSQL or SQLite), against a fake
 * provider and a webhook that answer at once:
 *
 * - time to first token: POST …/messages (SSE) → first `message.delta`, vs the fake's first
 *   content chunk read directly in this process;
 * - a webhook tool call: the `tool.call` frame → the `tool.result` frame at the client, vs the
 *   same POST sent to the webhook directly.
 *
 * Interleaved, rounds alternating who goes first. The breakdown uses timestamps from each side:
 * the commit's `recordedAt` (taken as the append starts), the event's arrival on NATS as a core
 * subscriber next to the gateway sees it (the JetStream subjects), the fake's and the webhook's
 * receipt, and the SSE frame's arrival (all epoch ms; sub-ms where this process measured it).
 */
import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { cpus } from 'node:os';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import { SecretBox } from '@keel/runtime';
import type { FakeOpenAI } from '../packages/testkit/src/fake-openai/index.js';
import { fakeReply, startFakeOpenAI } from '../packages/testkit/src/fake-openai/index.js';
import type { ProcessHandle } from '../packages/testkit/src/start-process.js';
import { startProcess } from '../packages/testkit/src/start-process.js';
import { freePort, readSse } from './gateway-stream-platform.js';
import type { BenchInfra } from './lib/infra.js';
import { freshName } from './lib/infra.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { now, summarize } from './lib/stats.js';

const ROUNDS = Number(process.env.BENCH_TURN_ROUNDS ?? 30);
const WARMUP = 3;
/** Agent instances behind the gateway (`BENCH_TURN_AGENTS`), for the throughput figure. */
const AGENTS = Number(process.env.BENCH_TURN_AGENTS ?? 1);
const TEXT = 'hello from the fake provider';
/** Turns of the throughput phase, and how many run at once. */
const LOAD_TURNS = Number(process.env.BENCH_TURN_LOAD ?? 60);
const LOAD_PARALLEL = Number(process.env.BENCH_TURN_PARALLEL ?? 12);
const ARGS = { id: 'order-1' };

/** The store's backend as the run names it (`BENCH_STORE_BACKEND` names a server given by MONGODB_URL). */
const backendOf = (infra: BenchInfra): string => process.env.BENCH_STORE_BACKEND ?? infra.mongoBackend;

/** Epoch milliseconds with this process's sub-millisecond clock. */
const epoch = (): number => performance.timeOrigin + now();

interface Webhook {
  url: string;
  /** Epoch ms of each POST's arrival, in order. */
  received: number[];
  close(): Promise<void>;
}

/** A webhook that answers every POST at once with a small JSON body. */
const startWebhook = async (): Promise<Webhook> => {
  const received: number[] = [];
  const server = createServer((request, response) => {
    received.push(epoch());
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"ok":true,"status":"refunded"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
};

/** The events on NATS (JetStream subjects, seen by a core subscriber), by event id. */
interface NatsTap {
  /** `<conversation>/<type>` (first one) → arrival epoch ms and the event's recordedAt. */
  seen: Map<string, { at: number; recordedAt: number }>;
  close(): Promise<void>;
}

const tapEvents = async (natsUrl: string, subjectPrefix: string): Promise<NatsTap> => {
  const nc = await connect({ servers: natsUrl, name: 'bench-turn-latency-tap' });
  const seen = new Map<string, { at: number; recordedAt: number }>();
  const sub = nc.subscribe(`${subjectPrefix}.>`, {
    callback: (_error, msg) => {
      const at = epoch();
      try {
        const event = msg.json<{ type: string; streamName: string; recordedAt: string }>();
        const key = `${event.streamName.slice(event.streamName.indexOf('-') + 1)}/${event.type}`;
        if (!seen.has(key)) seen.set(key, { at, recordedAt: Date.parse(event.recordedAt) });
      } catch {
        // not an event
      }
    },
  });
  return {
    seen,
    close: async () => {
      sub.unsubscribe();
      await nc.close();
    },
  };
};

interface Platform {
  base: string;
  editorKey: string;
  subjectPrefix: string;
  agents: ProcessHandle[];
  processes: ProcessHandle[];
  stop(): Promise<void>;
}

/** CPU seconds (user + system) a process has used so far (Linux /proc). */
const cpuSecondsOf = async (pid: number): Promise<number> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the line (11 and 12 after the command), in clock ticks.
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
};

interface Throughput {
  turns: number;
  completed: number;
  wallMs: number;
  /** CPU seconds per turn, by process name (Keel's services; the store and NATS where known). */
  cpuPerTurn: Map<string, number>;
}

/** LOAD_TURNS text turns streamed, LOAD_PARALLEL at a time: turns per second and CPU per turn. */
async function measureThroughput(platform: Platform, fake: FakeOpenAI): Promise<Throughput> {
  const ids: string[] = [];
  for (let i = 0; i < LOAD_TURNS; i++) ids.push(await createConversation(platform));
  fake.script(...Array.from({ length: LOAD_TURNS }, () => fakeReply.text(TEXT)));
  const pids = new Map(platform.processes.map((p) => [p.name, p.pid]));
  const ferret = Number(process.env.BENCH_FERRETDB_PID ?? 0);
  if (ferret > 0) pids.set('ferretdb', ferret);
  const before = new Map(
    await Promise.all([...pids].map(async ([n, pid]) => [n, await cpuSecondsOf(pid)] as const)),
  );
  let next = 0;
  let completed = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: LOAD_PARALLEL }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const turn = await streamTurn(platform, id).catch((error: unknown) => {
          if (process.env.BENCH_ECHO === '1')
            console.error(`turn-latency: load turn failed: ${String(error)}`);
          return undefined;
        });
        if (turn?.completed) completed++;
        else if (turn && process.env.BENCH_ECHO === '1')
          console.error(
            `turn-latency: load turn ended without turn.completed: ${[...turn.frames.keys()].join(' ')}`,
          );
      }
    }),
  );
  const wallMs = now() - started;
  const cpuPerTurn = new Map<string, number>();
  for (const [name, pid] of pids)
    cpuPerTurn.set(name, ((await cpuSecondsOf(pid)) - before.get(name)!) / LOAD_TURNS);
  return { turns: LOAD_TURNS, completed, wallMs, cpuPerTurn };
}

const withDatabase = (url: string, db: string): string => {
  const parsed = new URL(url);
  parsed.pathname = `/${db}`;
  return parsed.toString();
};

/** With `BENCH_DB_TRACE=<dir>`: each process logs its MongoDB commands there (bench/lib/db-trace.mjs). */
const dbTraceEnv = (name: string): Record<string, string> =>
  process.env.BENCH_DB_TRACE
    ? {
        BENCH_DB_TRACE_NAME: name,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${new URL('./lib/db-trace.mjs', import.meta.url).pathname}`,
      }
    : {};

/** Marks a measured turn's start or end in the DB trace directory (epoch ms), when tracing. */
const markDbTrace = (what: string): void => {
  const dir = process.env.BENCH_DB_TRACE;
  if (dir) appendFileSync(`${dir}/window.log`, `${Date.now()} ${what} ${ROUNDS}\n`);
};

/** Agent(s), tools, pricing, audit and a gateway as processes; a tenant with the `bench` agent and its `refund` webhook tool. */
export async function startFivePlatform(
  infra: BenchInfra,
  fakeUrl: string,
  webhookUrl: string,
  agents = AGENTS,
  extraEnv: Record<string, string> = {},
): Promise<Platform> {
  const operatorKey = `op_${freshName('bench')}`;
  const subjectPrefix = `b.${freshName('tl')}`;
  const env: Record<string, string> = {
    MONGODB_URL: withDatabase(infra.mongoUrl, freshName('bench_turnlat')),
    NATS_URL: infra.natsUrl,
    KEEL_NATS_STREAM: freshName('BENCH_TURNLAT').toUpperCase(),
    KEEL_SUBJECT_PREFIX: subjectPrefix,
    KEEL_MASTER_KEY: SecretBox.generateKey(),
    KEEL_OPERATOR_KEY: operatorKey,
    KEEL_EGRESS_ALLOW: '127.0.0.0/8',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: fakeUrl,
    LOG_LEVEL: 'info',
    KEEL_RATE_LIMIT_RPM: '10000000',
    KEEL_RATE_LIMIT_BUCKET: freshName('bench_rl'),
    ...extraEnv,
  };
  const ports = {
    http: await freePort(),
    gateway: await freePort(),
    tools: await freePort(),
    pricing: await freePort(),
    audit: await freePort(),
    agents: await Promise.all(Array.from({ length: agents }, () => freePort())),
  };
  const pricingUrl = `127.0.0.1:${ports.pricing}`;
  const start = (name: string, service: string, extra: Record<string, string>) =>
    startProcess({
      name,
      entry: `services/${service}/src/main.ts`,
      env: { ...env, ...dbTraceEnv(name), ...extra },
      readyLine: /"msg":"ready"/,
      readyTimeoutMs: 90_000,
      echo: process.env.BENCH_ECHO === '1',
    });
  const started = await Promise.allSettled([
    ...ports.agents.map((port, i) =>
      start(`agent${i + 1}`, 'agent', {
        GRPC_PORT: String(port),
        PRICING_GRPC_URL: pricingUrl,
        KEEL_AGENT_CONCURRENCY: '64',
      }),
    ),
    start('tools', 'tools', { GRPC_PORT: String(ports.tools) }),
    start('pricing', 'pricing', { GRPC_PORT: String(ports.pricing) }),
    start('audit', 'audit', { GRPC_PORT: String(ports.audit) }),
    start('gateway', 'gateway', {
      PORT: String(ports.http),
      HOST: '127.0.0.1',
      GRPC_PORT: String(ports.gateway),
      AGENT_GRPC_URL: ports.agents.map((p) => `127.0.0.1:${p}`).join(','),
      PRICING_GRPC_URL: pricingUrl,
      AUDIT_GRPC_URL: `127.0.0.1:${ports.audit}`,
    }),
  ]);
  const processes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const base = `http://127.0.0.1:${ports.http}`;
  const editorKey = await configureTenant(base, operatorKey, fakeUrl, webhookUrl);
  return {
    base,
    editorKey,
    subjectPrefix,
    agents: processes.filter((p) => p.name.startsWith('agent')),
    processes,
    stop,
  };
}

async function configureTenant(
  base: string,
  operatorKey: string,
  fakeUrl: string,
  webhookUrl: string,
): Promise<string> {
  const call = async (path: string, key: string, body?: unknown, method = 'POST') => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, string>;
  };
  const tenant = await call('/v1/tenants', operatorKey, { name: 'Bench' });
  const admin = await call(`/v1/tenants/${tenant.id}/keys`, operatorKey, { role: 'admin' });
  const editor = await call(`/v1/tenants/${tenant.id}/keys`, operatorKey, { role: 'editor' });
  await call('/v1/webhook-secret', admin.key!, {});
  await call('/v1/providers/openai', admin.key!, { baseUrl: fakeUrl, apiKey: 'sk-bench' }, 'PUT');
  await call(
    '/v1/tools/refund',
    admin.key!,
    {
      description: 'Refund an order',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      kind: 'webhook',
      url: webhookUrl,
      approval: 'never',
      timeoutMs: 10_000,
    },
    'PUT',
  );
  await call(
    '/v1/agents/bench',
    admin.key!,
    { model: 'openai:gpt-4o-mini', tools: ['refund'], maxSteps: 3 },
    'PUT',
  );
  return editor.key!;
}

export async function createConversation(platform: Platform): Promise<string> {
  const response = await fetch(`${platform.base}/v1/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.editorKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId: 'bench' }),
  });
  if (response.status !== 201) throw new Error(`create: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** One turn streamed through the gateway: the epoch arrival of each frame type (first one). */
export async function streamTurn(
  platform: Platform,
  conversationId: string,
): Promise<{ sentAt: number; frames: Map<string, number>; completed: boolean }> {
  const frames = new Map<string, number>();
  const sentAt = epoch();
  const response = await fetch(`${platform.base}/v1/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${platform.editorKey}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    },
    body: JSON.stringify({ content: 'go' }),
    signal: AbortSignal.timeout(30_000),
  });
  if (response.status !== 200) throw new Error(`stream: ${response.status} ${await response.text()}`);
  let completed = false;
  await readSse(response, (event) => {
    if (!frames.has(event.event)) frames.set(event.event, performance.timeOrigin + event.at);
    if (event.event === 'turn.completed') return (completed = true);
    return event.event === 'turn.failed' || event.event === 'turn.cancelled';
  });
  return { sentAt, frames, completed };
}

/** The fake's stream read directly: request → first content chunk, ms. */
async function directFirstToken(fake: FakeOpenAI): Promise<number> {
  const start = now();
  const response = await fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  });
  let first = Number.NaN;
  await readSse(response, (event) => {
    if (event.data === '[DONE]') return true;
    const chunk = JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: string } }> };
    if (chunk.choices?.[0]?.delta?.content && Number.isNaN(first)) first = event.at - start;
    return false;
  });
  return first;
}

/** The same POST the tools service sends, sent directly: request → response body read, ms. */
async function directPost(webhook: Webhook): Promise<number> {
  const body = JSON.stringify({
    toolCallId: '0192f1c2-0000-7000-8000-000000000000',
    conversationId: '0192f1c2-0000-7000-8000-000000000001',
    tool: 'refund',
    args: ARGS,
  });
  const start = now();
  const response = await fetch(webhook.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'bench' },
    body,
  });
  await response.json();
  return now() - start;
}

interface Figures {
  ttftDirect: number[];
  ttftKeel: number[];
  postDirect: number[];
  toolKeel: number[];
  turnKeel: number[];
  /** Named spans of the breakdown, ms each. */
  spans: Map<string, number[]>;
}

const span = (figures: Figures, name: string, from: number | undefined, to: number | undefined): void => {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to)) return;
  const list = figures.spans.get(name) ?? [];
  list.push(to - from);
  figures.spans.set(name, list);
};

async function measure(
  platform: Platform,
  fake: FakeOpenAI,
  webhook: Webhook,
  tap: NatsTap,
): Promise<Figures> {
  const figures: Figures = {
    ttftDirect: [],
    ttftKeel: [],
    postDirect: [],
    toolKeel: [],
    turnKeel: [],
    spans: new Map(),
  };
  const conversations: string[] = [];
  for (let i = 0; i < 2 * (ROUNDS + WARMUP); i++) conversations.push(await createConversation(platform));
  for (let round = 0; round < ROUNDS + WARMUP; round++) {
    const keep = round >= WARMUP;
    if (process.env.BENCH_ECHO === '1') console.error(`turn-latency: round ${round}`);
    const textTurn = async () => {
      fake.script(fakeReply.text(TEXT));
      const before = fake.requests.length;
      const id = conversations[2 * round]!;
      if (keep) markDbTrace('text-start');
      const turn = await streamTurn(platform, id);
      if (!keep) return;
      markDbTrace('text-end');
      const first = turn.frames.get('message.delta');
      figures.ttftKeel.push((first ?? Number.NaN) - turn.sentAt);
      const model = fake.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'));
      const started = tap.seen.get(`${id}/TurnStarted`);
      span(figures, 'ttft: POST → TurnStarted commit begins', turn.sentAt, started?.recordedAt);
      span(figures, 'ttft: commit begins → event on NATS', started?.recordedAt, started?.at);
      span(
        figures,
        'ttft: POST → turn.started frame at client',
        turn.sentAt,
        turn.frames.get('turn.started'),
      );
      span(figures, 'ttft: event on NATS → fake receives model request', started?.at, model?.receivedAt);
      span(figures, 'ttft: fake receives request → first delta at client', model?.receivedAt, first);
    };
    const toolTurn = async () => {
      fake.script(fakeReply.toolCall('refund', ARGS));
      fake.script(fakeReply.text(TEXT));
      const hooks = webhook.received.length;
      const id = conversations[2 * round + 1]!;
      if (keep) markDbTrace('tool-start');
      const turn = await streamTurn(platform, id);
      if (!keep) return;
      markDbTrace('tool-end');
      const call = turn.frames.get('tool.call');
      const result = turn.frames.get('tool.result');
      figures.toolKeel.push((result ?? Number.NaN) - (call ?? Number.NaN));
      figures.turnKeel.push((turn.frames.get('turn.completed') ?? Number.NaN) - turn.sentAt);
      const requested = tap.seen.get(`${id}/ToolCallRequested`);
      const completed = tap.seen.get(`${id}/ToolCallCompleted`);
      const hookAt = webhook.received[hooks];
      span(figures, 'tool: ToolCallRequested commit begins → on NATS', requested?.recordedAt, requested?.at);
      span(figures, 'tool: on NATS → tool.call frame at client', requested?.at, call);
      span(figures, 'tool: on NATS → webhook receives the POST', requested?.at, hookAt);
      span(
        figures,
        'tool: webhook receives → ToolCallCompleted commit begins',
        hookAt,
        completed?.recordedAt,
      );
      span(figures, 'tool: ToolCallCompleted commit begins → on NATS', completed?.recordedAt, completed?.at);
      span(figures, 'tool: on NATS → tool.result frame at client', completed?.at, result);
    };
    const direct = async () => {
      fake.script(fakeReply.text(TEXT));
      const ttft = await directFirstToken(fake);
      const post = await directPost(webhook);
      if (keep) {
        figures.ttftDirect.push(ttft);
        figures.postDirect.push(post);
      }
    };
    if (round % 2 === 0) {
      await direct();
      await textTurn();
      await toolTurn();
    } else {
      await textTurn();
      await toolTurn();
      await direct();
    }
  }
  return figures;
}

const f = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(2));
const row = (scenario: string, variant: string, values: number[]): Row => {
  const s = summarize(values.filter(Number.isFinite));
  return { scenario, variant, n: s.n, p50Ms: s.p50, p99Ms: s.p99 };
};

/** One platform's figures: the fast path on or off (KEEL_FAST_PATH), and the throughput phase when run. */
interface ModeFigures {
  mode: 'on' | 'off';
  figures: Figures;
  load?: Throughput;
}

/** The rows of one mode: Keel's rows labelled by the mode, each with its raw baseline of the same platform run. */
function modeRows({ mode, figures, load }: ModeFigures): Row[] {
  const p50 = (values: number[]) => summarize(values.filter(Number.isFinite)).p50;
  const keel = mode === 'on' ? 'keel' : 'keel, fast path off';
  const raw = mode === 'on' ? 'raw' : 'raw (fast path off run)';
  const rows: Row[] = [
    row('time to first token', raw, figures.ttftDirect),
    {
      ...row('time to first token', keel, figures.ttftKeel),
      ratio: p50(figures.ttftKeel) / p50(figures.ttftDirect),
    },
    row('webhook tool call: tool.call → tool.result', raw, figures.postDirect),
    {
      ...row('webhook tool call: tool.call → tool.result', keel, figures.toolKeel),
      ratio: p50(figures.toolKeel) / p50(figures.postDirect),
    },
    row('a whole one-tool turn: POST → turn.completed', keel, figures.turnKeel),
    ...[...figures.spans].map(([name, values]) =>
      row(name, `span${mode === 'on' ? '' : ', fast path off'}`, values),
    ),
  ];
  if (load) {
    rows.push({
      scenario: `throughput: ${load.turns} text turns, ${LOAD_PARALLEL} at a time, ${AGENTS} agent(s)`,
      variant: keel,
      n: load.completed,
      p50Ms: Number.NaN,
      p99Ms: Number.NaN,
      opsPerSec: (1000 * load.completed) / load.wallMs,
    });
  }
  return rows;
}

function modeNotes({ mode, figures, load }: ModeFigures, infra: BenchInfra): string[] {
  const p50 = (values: number[]) => summarize(values.filter(Number.isFinite)).p50;
  const notes = [
    `Fast path ${mode}: added time to first token (p50) ${f(p50(figures.ttftKeel) - p50(figures.ttftDirect))} ms (goal ≤ 5 ms); added per webhook tool call (p50) ${f(p50(figures.toolKeel) - p50(figures.postDirect))} ms (goal ≤ 10 ms). Backend: ${backendOf(infra)}.`,
  ];
  if (load) {
    const cpu = [...load.cpuPerTurn].map(([name, s]) => `${name} ${(1000 * s).toFixed(1)} ms`).join(', ');
    const cpuTotal = [...load.cpuPerTurn.values()].reduce((a, b) => a + b, 0);
    notes.push(
      `Throughput (fast path ${mode}): ${load.completed}/${load.turns} turns completed, ${((1000 * load.completed) / load.wallMs).toFixed(1)} turns/s with ${AGENTS} agent process(es) on ${cpus().length} cores. CPU per turn: ${cpu} (sum ${(1000 * cpuTotal).toFixed(1)} ms; PostgreSQL and NATS not counted): these processes alone bound the rate near ${(cpus().length / cpuTotal).toFixed(0)} turns/s on ${cpus().length} cores.`,
    );
  }
  return notes;
}

function reportOf(modes: ModeFigures[], infra: BenchInfra): BenchReport {
  return {
    name: 'turn-latency',
    title: "Turn latency: Keel's own hops as a client sees them (five services as processes)",
    description: [
      `Gateway, agent (${AGENTS}), tools, pricing and audit as separate processes on NATS and ${backendOf(infra)}; the fake OpenAI server and a webhook answer at once; ${ROUNDS} interleaved rounds after ${WARMUP} warm-up ones, per platform run (KEEL_FAST_PATH ${modes.map((m) => m.mode).join(', then ')}).`,
      'raw: the fake read directly (first content chunk), and the same webhook POST sent directly (response read), interleaved with the platform run it sits beside.',
      'Spans: commit begins = the event\'s recordedAt (taken as the append starts, in the writing process); "on NATS" = a core subscriber next to the gateway sees the event on its JetStream subject.',
    ],
    rows: modes.flatMap(modeRows),
    notes: modes.flatMap((m) => modeNotes(m, infra)),
  };
}

/** Starts the platform with KEEL_FAST_PATH=`mode`, measures, stops it. */
async function measureMode(
  infra: BenchInfra,
  fake: FakeOpenAI,
  webhook: Webhook,
  mode: 'on' | 'off',
): Promise<ModeFigures> {
  const platform = await startFivePlatform(infra, fake.url, webhook.url, AGENTS, { KEEL_FAST_PATH: mode });
  try {
    const tap = await tapEvents(infra.natsUrl, platform.subjectPrefix);
    try {
      const figures = await measure(platform, fake, webhook, tap);
      const load = mode === 'on' && LOAD_TURNS > 0 ? await measureThroughput(platform, fake) : undefined;
      return { mode, figures, ...(load ? { load } : {}) };
    } finally {
      await tap.close();
    }
  } finally {
    await platform.stop();
  }
}

async function run(infra: BenchInfra): Promise<BenchReport> {
  const fake = await startFakeOpenAI();
  const webhook = await startWebhook();
  const modes = (process.env.BENCH_TURN_MODES ?? 'off,on').split(',') as Array<'on' | 'off'>;
  try {
    const measured: ModeFigures[] = [];
    for (const mode of modes) measured.push(await measureMode(infra, fake, webhook, mode));
    return reportOf(measured, infra);
  } finally {
    await fake.close();
    await webhook.close();
  }
}

/** `npm run bench -- turn-latency`. */
export const turnLatencyBench: Bench = { name: 'turn-latency', needsNats: true, run };
