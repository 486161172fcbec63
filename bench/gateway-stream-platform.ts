/**
 * The platform the gateway-stream benchmark drives: the gateway, the agent and the tools service
 * as separate processes (as in production) on the run's NATS and MongoDB, a tenant with an editor
 * key and one agent whose model is the fake OpenAI server, and readers of both SSE dialects.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { InMemoryDeadLetters, InMemoryInbox } from '@keel/core';
import { NatsEventBus } from '@keel/core/nats';
import { SecretBox } from '@keel/runtime';
import type { BenchInfra } from './lib/infra.js';
import { freshName } from './lib/infra.js';
import { now } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const run = promisify(execFile);

/** A started service process. */
export interface ServiceProcess {
  name: string;
  pid: number;
  /** The process's inspector (`--inspect` given): its WebSocket address. */
  inspectorUrl?: string;
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (the OS's pick). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** Starts `node --import tsx <entry>` and resolves once it logs its ready line. */
const startService = (
  name: string,
  entry: string,
  env: Record<string, string>,
  readyLine = /"msg":"ready"/,
  nodeArgs: string[] = [],
): Promise<ServiceProcess> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(
      process.execPath,
      [...nodeArgs, '--conditions=@keel/source', '--import', 'tsx', entry],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const last: string[] = [];
    let inspectorUrl: string | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} not ready within 90 s:\n${last.join('\n')}`));
    }, 90_000);
    const onLine = (line: string) => {
      last.push(line);
      if (last.length > 30) last.shift();
      inspectorUrl ??= /Debugger listening on (ws:\S+)/.exec(line)?.[1];
      if (readyLine.test(line)) {
        clearTimeout(timer);
        resolve({
          name,
          pid: child.pid!,
          ...(inspectorUrl ? { inspectorUrl } : {}),
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
              child.once('exit', () => {
                clearTimeout(kill);
                done();
              });
              child.kill('SIGTERM');
            }),
        });
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${String(code)}) before it was ready:\n${last.join('\n')}`));
    });
  });

/** The running platform and the keys the benchmark uses. */
export interface BenchPlatform {
  base: string;
  /** The JetStream stream and subject prefix the services use (the deltas tap subscribes there too). */
  streamName: string;
  subjectPrefix: string;
  gateway: ServiceProcess;
  /** Every process of the platform (the gateway among them). */
  services: ServiceProcess[];
  editorKey: string;
  stop(): Promise<void>;
}

/**
 * Starts `agents` agent processes, tools, pricing, audit and the gateway on a fresh database and stream, then (over HTTP, as a tenant
 * backend would) creates a tenant, its admin and editor keys, the provider pointing at the fake
 * and an agent `bench` on `openai:gpt-4o-mini`.
 */
export async function startBenchPlatform(
  infra: BenchInfra,
  fakeUrl: string,
  agentConcurrency: number,
  agents = 1,
): Promise<BenchPlatform> {
  const operatorKey = `op_${freshName('bench')}`;
  const env: Record<string, string> = {
    MONGODB_URL: withDatabase(infra.mongoUrl, freshName('bench_gwstream')),
    NATS_URL: infra.natsUrl,
    KEEL_NATS_STREAM: freshName('BENCH_GWSTREAM').toUpperCase(),
    KEEL_SUBJECT_PREFIX: `b.${freshName('gws')}`,
    KEEL_MASTER_KEY: SecretBox.generateKey(),
    KEEL_OPERATOR_KEY: operatorKey,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: fakeUrl,
    // The fake provider listens on loopback: opened on purpose, as an operator would for a local model.
    KEEL_EGRESS_ALLOW: '127.0.0.0/8,::1/128',
    LOG_LEVEL: 'info',
    // The limiter stays on (counting in NATS KV) but never refuses: its cost is part of the figures.
    KEEL_RATE_LIMIT_RPM: '10000000',
    KEEL_RATE_LIMIT_BUCKET: freshName('bench_rl'),
  };
  const [port, grpcPort, toolsPort, pricingPort, auditPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const agentPorts: number[] = [];
  for (let i = 0; i < agents; i++) agentPorts.push(await freePort());
  // Every model step is priced over gRPC: without a pricing service each one waits out its retries.
  env.PRICING_GRPC_URL = `127.0.0.1:${pricingPort}`;
  env.AUDIT_GRPC_URL = `127.0.0.1:${auditPort}`;
  const started: ServiceProcess[] = [];
  const stop = async () => {
    await Promise.all(started.map((service) => service.stop()));
  };
  try {
    started.push(
      ...(await Promise.all([
        ...agentPorts.map((agentPort, i) =>
          startService(
            agents === 1 ? 'agent' : `agent${i + 1}`,
            'services/agent/src/main.ts',
            {
              ...env,
              GRPC_PORT: String(agentPort),
              KEEL_AGENT_CONCURRENCY: String(agentConcurrency),
            },
            undefined,
            // BENCH_GATEWAY_CPU_PROFILE profiles the agents too, over their inspectors.
            process.env.BENCH_GATEWAY_CPU_PROFILE ? ['--inspect=127.0.0.1:0'] : [],
          ),
        ),
        startService('tools', 'services/tools/src/main.ts', { ...env, GRPC_PORT: String(toolsPort) }),
        startService('pricing', 'services/pricing/src/main.ts', { ...env, GRPC_PORT: String(pricingPort) }),
        startService('audit', 'services/audit/src/main.ts', { ...env, GRPC_PORT: String(auditPort) }),
        startService(
          'gateway',
          'services/gateway/src/main.ts',
          {
            ...env,
            PORT: String(port),
            HOST: '127.0.0.1',
            GRPC_PORT: String(grpcPort),
            // More than one agent: the gateway balances its calls over the list (round robin).
            AGENT_GRPC_URL: agentPorts.map((agentPort) => `127.0.0.1:${agentPort}`).join(','),
          },
          undefined,
          // The inspector answers heapUsedAfterGc (the gateway's own heap per open stream).
          ['--inspect=127.0.0.1:0'],
        ),
      ])),
    );
    const base = `http://127.0.0.1:${port}`;
    const editorKey = await configureTenant(base, operatorKey, fakeUrl);
    return {
      base,
      streamName: env.KEEL_NATS_STREAM!,
      subjectPrefix: env.KEEL_SUBJECT_PREFIX!,
      gateway: started.find((s) => s.name === 'gateway')!,
      services: started,
      editorKey,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Over HTTP, as a tenant backend would: a tenant, its keys, the provider and the `bench` agent; the editor key. */
async function configureTenant(base: string, operatorKey: string, fakeUrl: string): Promise<string> {
  const post = async (path: string, key: string, body: unknown, method = 'POST') => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, string>;
  };
  const tenant = await post('/v1/tenants', operatorKey, { name: 'Bench' });
  const admin = await post(`/v1/tenants/${tenant.id}/keys`, operatorKey, { role: 'admin' });
  const editor = await post(`/v1/tenants/${tenant.id}/keys`, operatorKey, { role: 'editor' });
  // BENCH_GATEWAY_BUDGET_USD: a monthly budget, so every turn is admitted through a reservation.
  const budget = process.env.BENCH_GATEWAY_BUDGET_USD;
  if (budget)
    await post(`/v1/tenants/${tenant.id}/budget`, operatorKey, { monthlyUsd: Number(budget) }, 'PUT');
  await post('/v1/providers/openai', admin.key!, { baseUrl: fakeUrl, apiKey: 'sk-bench' }, 'PUT');
  await post('/v1/agents/bench', admin.key!, { model: 'openai:gpt-4o-mini', maxSteps: 2 }, 'PUT');
  return editor.key!;
}

/**
 * The one-process platform (`npm start`: all five services in one process) with the store in
 * memory and the bus on the run's NATS: what the load phase measures, because with FerretDB the
 * agent cannot start 500 turns within its call deadline on this machine. The "gateway" process is
 * then the whole platform, so its RSS is an upper bound of the gateway's.
 */
export async function startDevPlatform(
  infra: BenchInfra,
  fakeUrl: string,
  agentConcurrency: number,
): Promise<BenchPlatform> {
  const operatorKey = `op_${freshName('bench')}`;
  const ports = { http: await freePort(), gateway: await freePort(), agent: await freePort() };
  const env: Record<string, string> = {
    NATS_URL: infra.natsUrl,
    KEEL_NATS_STREAM: freshName('BENCH_GWDEV').toUpperCase(),
    KEEL_SUBJECT_PREFIX: `b.${freshName('gwd')}`,
    KEEL_MASTER_KEY: SecretBox.generateKey(),
    KEEL_OPERATOR_KEY: operatorKey,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: fakeUrl,
    LOG_LEVEL: 'info',
    KEEL_RATE_LIMIT_RPM: '10000000',
    KEEL_RATE_LIMIT_BUCKET: freshName('bench_rl'),
    KEEL_AGENT_CONCURRENCY: String(agentConcurrency),
    PORT: String(ports.http),
    HOST: '127.0.0.1',
    GRPC_PORT: String(ports.gateway),
    AGENT_GRPC_PORT: String(ports.agent),
    AGENT_GRPC_URL: `127.0.0.1:${ports.agent}`,
    TOOLS_GRPC_PORT: String(await freePort()),
    AUDIT_GRPC_PORT: String(await freePort()),
    PRICING_GRPC_PORT: String(await freePort()),
  };
  env.PRICING_GRPC_URL = `127.0.0.1:${env.PRICING_GRPC_PORT}`;
  const platform = await startService('platform', 'apps/dev/src/main.ts', env, /dev mode ready/);
  try {
    const base = `http://127.0.0.1:${ports.http}`;
    const editorKey = await configureTenant(base, operatorKey, fakeUrl);
    return {
      base,
      streamName: env.KEEL_NATS_STREAM!,
      subjectPrefix: env.KEEL_SUBJECT_PREFIX!,
      gateway: platform,
      services: [platform],
      editorKey,
      stop: () => platform.stop(),
    };
  } catch (error) {
    await platform.stop();
    throw error;
  }
}

const withDatabase = (url: string, db: string): string => {
  const parsed = new URL(url);
  parsed.pathname = `/${db}`;
  return parsed.toString();
};

/** When each token delta crossed NATS, per conversation, as this process (another subscriber) saw it. */
export interface DeltaTap {
  arrivals: Map<string, number[]>;
  close(): Promise<void>;
}

/** Subscribes to every conversation's deltas on the platform's NATS, next to the gateway. */
export async function tapDeltas(infra: BenchInfra, platform: BenchPlatform): Promise<DeltaTap> {
  const bus = await NatsEventBus.connect({
    servers: infra.natsUrl,
    streamName: platform.streamName,
    subjectPrefix: platform.subjectPrefix,
    inbox: new InMemoryInbox(),
    deadLetters: new InMemoryDeadLetters(),
    connectionName: 'bench-delta-tap',
  });
  const arrivals = new Map<string, number[]>();
  const subscription = bus.ephemeral.subscribe({ kind: 'deltas' }, ({ topic, data }) => {
    if ((data as { type?: string }).type !== 'delta') return;
    const at = now();
    const list = arrivals.get(topic.conversationId);
    if (list) list.push(at);
    else arrivals.set(topic.conversationId, [at]);
  });
  return {
    arrivals,
    close: async () => {
      subscription.unsubscribe();
      await bus.close();
    },
  };
}

/**
 * The heap a process holds after a full garbage collection, asked over its inspector (Chrome
 * DevTools Protocol): live objects only, unlike the RSS, which keeps what the heap once grew to.
 */
export async function heapUsedAfterGc(inspectorUrl: string): Promise<number> {
  const session = await inspect(inspectorUrl);
  try {
    await session.send('HeapProfiler.collectGarbage');
    const reply = (await session.send('Runtime.evaluate', {
      expression: 'process.memoryUsage().heapUsed',
      returnByValue: true,
    })) as { result?: { value?: unknown } };
    return Number(reply.result?.value ?? Number.NaN);
  } finally {
    session.close();
  }
}

/** A DevTools Protocol session with a process's inspector: a method's result, in order. */
interface InspectorSession {
  send(method: string, params?: Record<string, unknown>): Promise<unknown>;
  close(): void;
}

async function inspect(inspectorUrl: string): Promise<InspectorSession> {
  const socket = new WebSocket(inspectorUrl);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', reject, { once: true });
  });
  let id = 0;
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve) => {
      const mine = ++id;
      const onMessage = (message: MessageEvent) => {
        const reply = JSON.parse(String(message.data)) as { id?: number; result?: unknown };
        if (reply.id !== mine) return;
        socket.removeEventListener('message', onMessage);
        resolve(reply.result);
      };
      socket.addEventListener('message', onMessage);
      socket.send(JSON.stringify({ id: mine, method, params }));
    });
  return { send, close: () => socket.close() };
}

/**
 * Runs `work` with the process's CPU profiler on and writes the profile (a `.cpuprofile`, for
 * Chrome DevTools or any profile viewer) to `path`.
 */
export async function cpuProfileDuring<T>(
  inspectorUrl: string,
  path: string,
  work: () => Promise<T>,
): Promise<T> {
  const session = await inspect(inspectorUrl);
  try {
    await session.send('Profiler.enable');
    await session.send('Profiler.start');
    const result = await work();
    const { profile } = (await session.send('Profiler.stop')) as { profile: unknown };
    await writeFile(path, JSON.stringify(profile));
    return result;
  } finally {
    session.close();
  }
}

/** The pid of the process listening on TCP `port` (`ss -ltnp`), undefined when not found. */
export const pidListeningOn = async (port: number): Promise<number | undefined> => {
  const listing = await run('ss', ['-ltnpH', `sport = :${port}`]).catch(() => ({ stdout: '' }));
  const pid = /pid=(\d+)/.exec(listing.stdout)?.[1];
  return pid === undefined ? undefined : Number(pid);
};

/**
 * The PostgreSQL database the run's FerretDB stores into, as the infra names it ("…, database
 * keel_ferretdb_…"), with psql to ask its server about it; undefined on another backend.
 */
export const ferretDbPostgres = (mongoSource: string): { database: string } | undefined => {
  const database = /database (keel_ferretdb_\w+)/.exec(mongoSource)?.[1];
  return database ? { database } : undefined;
};

/**
 * What PostgreSQL did for one database so far: transactions committed (one per FerretDB
 * command, about) and the CPU ms of the backends connected to it now (FerretDB's pool keeps
 * them). Undefined when psql cannot ask (another server, no psql).
 */
export const postgresWorkOf = async (
  database: string,
): Promise<
  { transactions: number; backends: Map<number, number>; scans: Map<string, number> } | undefined
> => {
  const url = process.env.KEEL_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const query = `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = '${database}') || ' ' || coalesce((SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE datname = '${database}'), '')`;
  const answer = await run('psql', ['-X', '-A', '-t', '-d', url, '-c', query], { timeout: 10_000 }).catch(
    () => undefined,
  );
  if (!answer) return undefined;
  const [transactions, pids = ''] = answer.stdout.trim().split(' ');
  const backends = new Map<number, number>();
  for (const pid of pids.split(',').filter(Boolean).map(Number)) {
    const ms = await cpuMsOf(pid).catch(() => undefined);
    if (ms !== undefined) backends.set(pid, ms);
  }
  return { transactions: Number(transactions), backends, scans: await tableScansOf(url, database) };
};

/**
 * Scans (sequential + index) of each table of `database` so far, by FerretDB collection (its
 * tables are named `<collection>_<hash>`): which collections the commands read.
 */
const tableScansOf = async (serverUrl: string, database: string): Promise<Map<string, number>> => {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const query = `SELECT relname || ' ' || (coalesce(seq_scan, 0) + coalesce(idx_scan, 0)) FROM pg_stat_user_tables`;
  const answer = await run('psql', ['-X', '-A', '-t', '-d', url.toString(), '-c', query], {
    timeout: 10_000,
  }).catch(() => undefined);
  const scans = new Map<string, number>();
  for (const line of answer?.stdout.split('\n') ?? []) {
    const [table, n] = line.trim().split(' ');
    if (!table || n === undefined) continue;
    const collection = table.replace(/_[0-9a-f]{8}$/, '');
    scans.set(collection, (scans.get(collection) ?? 0) + Number(n));
  }
  return scans;
};

/**
 * FerretDB's commands served so far, by command name, from its debug endpoint (the other port
 * its process listens on; `ferretdb_client_requests_total`); undefined when not found.
 */
export const ferretDbCommandsOf = async (
  pid: number,
  mongoPort: number,
): Promise<Map<string, number> | undefined> => {
  const listing = await run('ss', ['-ltnpH']).catch(() => ({ stdout: '' }));
  const debugPort = listing.stdout
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => Number(/:(\d+)\s/.exec(line)?.[1]))
    .find((port) => port > 0 && port !== mongoPort);
  if (debugPort === undefined) return undefined;
  const response = await fetch(`http://127.0.0.1:${debugPort}/debug/metrics`).catch(() => undefined);
  if (!response?.ok) return undefined;
  const counts = new Map<string, number>();
  for (const [, command, n] of (await response.text()).matchAll(
    /^ferretdb_client_requests_total\{command="([^"]+)"[^}]*\} (\d+)/gm,
  ))
    counts.set(command!, (counts.get(command!) ?? 0) + Number(n));
  return counts;
};

/** CPU time a process has used so far, user + system, in ms (Linux /proc; clock ticks at 100 Hz). */
export const cpuMsOf = async (pid: number): Promise<number> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** CPU time the whole machine spent busy so far (all cores, all processes), in ms (/proc/stat). */
export const machineBusyMsOf = async (): Promise<number> => {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) * 10;
};

/** Resident set size of a process in bytes (Linux /proc). */
export const rssOf = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kb ?? 0) * 1024;
};

/** One SSE event: its name (`message` when none), id and data text, with when it arrived. */
export interface SseEvent {
  event: string;
  id: string;
  data: string;
  at: number;
}

/** Reads an SSE body, calling `onEvent` per event (arrival time from `now()`); stops when it returns true. */
export async function readSse(
  response: Response,
  onEvent: (event: SseEvent) => boolean | void,
): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const at = now();
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { event: 'message', id: '', data: '', at };
        let any = false;
        for (const line of block.split('\n')) {
          if (line.startsWith(':') || !line.includes(':')) continue;
          const field = line.slice(0, line.indexOf(':'));
          const text = line.slice(line.indexOf(':') + 1).replace(/^ /, '');
          if (field === 'event') event.event = text;
          else if (field === 'id') event.id = text;
          else if (field === 'data') event.data += text;
          any = true;
        }
        if (any && onEvent(event) === true) return;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
