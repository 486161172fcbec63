/**
 * The gateway's streaming path, on separate gateway, agent, tools, pricing and audit processes over the run's
 * NATS and MongoDB, the model being the test kit's fake OpenAI server streaming a fixed text with
 * a fixed pause between tokens.
 *
 * Overhead: a turn streamed through the gateway (POST …/messages, Accept: text/event-stream) vs
 * the same fake, same script, read directly in this process, interleaved: time to first token
 * (first `message.delta` vs first content chunk) and the gap between tokens; the first-token time
 * is split at the moment the fake received the agent's model request.
 * Concurrency: 500 streaming turns opened at once against the one gateway: completion, token
 * gaps, the gateway's RSS before, at the most streams open, and after; memory per open stream;
 * where the first tokens wait (acceptance, then the turn's start) and where the CPU goes.
 *
 * Switches: BENCH_GATEWAY_ROUNDS (overhead rounds, 30), BENCH_GATEWAY_STREAMS (500),
 * BENCH_GATEWAY_ONLY=load (the streams alone), BENCH_GATEWAY_AGENTS (agent processes behind the
 * gateway for the load, 1), BENCH_GATEWAY_LOAD=dev (one process, store in
 * memory), BENCH_GATEWAY_BUDGET_USD (a tenant budget: every turn reserves), BENCH_GATEWAY_CPU_PROFILE
 * (a path: the gateway's and the agent's CPU profiles during the load).
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { FakeOpenAI } from '../packages/testkit/src/fake-openai/index.js';
import { fakeReply, startFakeOpenAI } from '../packages/testkit/src/fake-openai/index.js';
import type { BenchPlatform, DeltaTap, SseEvent } from './gateway-stream-platform.js';
import {
  cpuMsOf,
  cpuProfileDuring,
  heapUsedAfterGc,
  machineBusyMsOf,
  pidListeningOn,
  ferretDbCommandsOf,
  ferretDbPostgres,
  postgresWorkOf,
  readSse,
  rssOf,
  startBenchPlatform,
  startDevPlatform,
  tapDeltas,
} from './gateway-stream-platform.js';
import type { BenchInfra } from './lib/infra.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { machineLine } from './lib/results-file.js';
import { now, summarize } from './lib/stats.js';

/** Tokens per reply, characters per token, pause between tokens (the fake's chunkDelayMs). */
const TOKENS = 24;
const TOKEN_CHARS = 4;
const TOKEN_MS = 10;
/** `n` tokens of TOKEN_CHARS characters each. */
const textOf = (n: number): string =>
  Array.from({ length: n }, (_, i) => `t${String(i).padStart(2, '0')} `).join('');
const TEXT = textOf(TOKENS);
const ROUNDS = Number(process.env.BENCH_GATEWAY_ROUNDS ?? 30);
const WARMUP = 3;
const STREAMS = Number(process.env.BENCH_GATEWAY_STREAMS ?? 500);
/** Under load tokens come slower, so 500 streams are open at the same time for a while. */
const LOAD_TOKENS = 60;
const LOAD_TOKEN_MS = 400;
const LOAD_TEXT = textOf(LOAD_TOKENS);
const LOAD_TIMEOUT_MS = 120_000;
/**
 * Where the load runs: `services` (default) = gateway, agent, tools, pricing and audit as separate processes on
 * the run's store, so the RSS is the gateway's own; `dev` = `npm start`'s one process with the store
 * in memory (what this row measured while FerretDB ran on SQLite, which stalls at that load).
 */
const LOAD_ON = process.env.BENCH_GATEWAY_LOAD === 'dev' ? 'dev' : 'services';
/** Agent processes behind the gateway for the load (`BENCH_GATEWAY_AGENTS`, default 1; `services` only). */
const LOAD_AGENTS = Math.max(1, Number(process.env.BENCH_GATEWAY_AGENTS ?? 1) || 1);
/** `BENCH_GATEWAY_ONLY=load`: the 500 streams alone, without the overhead rounds (their rows stay empty). */
const LOAD_ONLY = process.env.BENCH_GATEWAY_ONLY === 'load';
const RESULTS = fileURLToPath(new URL('./results/gateway-stream.md', import.meta.url));

interface StreamTiming {
  /** Arrival times (now()) of the tokens. */
  times: number[];
  /** Request sent → first token, ms. */
  ttft: number;
  /** Gaps between successive tokens, ms. */
  gaps: number[];
  tokens: number;
  completed: boolean;
  /** Date.now() when the request was sent (to compare with the fake's receivedAt). */
  sentAtEpoch: number;
  /** Date.now() when the first token arrived. */
  firstAtEpoch: number;
  /** Request sent → the response's headers (the gateway answers once the agent accepted the message), ms. */
  accepted?: number;
  /** Why a stream did not complete (status and body start, or the error). */
  failure?: string;
}

const gapsOf = (times: number[]): number[] => times.slice(1).map((t, i) => t - times[i]!);

/** Reads the fake's stream directly, as the agent's OpenAI client would. */
async function direct(fake: FakeOpenAI): Promise<StreamTiming> {
  const sentAtEpoch = Date.now();
  const start = now();
  const response = await fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'go' }] }),
  });
  const times: number[] = [];
  let firstAtEpoch = 0;
  let completed = false;
  await readSse(response, (event) => {
    if (event.data === '[DONE]') return (completed = true);
    const chunk = JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: string } }> };
    if (chunk.choices?.[0]?.delta?.content) {
      if (times.length === 0) firstAtEpoch = Date.now();
      times.push(event.at);
    }
    return false;
  });
  return {
    times,
    ttft: (times[0] ?? Number.NaN) - start,
    gaps: gapsOf(times),
    tokens: times.length,
    completed,
    sentAtEpoch,
    firstAtEpoch,
  };
}

/** Streams one turn through the gateway. */
async function throughGateway(
  platform: BenchPlatform,
  conversationId: string,
  onOpen: () => void = () => undefined,
): Promise<StreamTiming> {
  const sentAtEpoch = Date.now();
  const start = now();
  const times: number[] = [];
  let firstAtEpoch = 0;
  let completed = false;
  let failure: string | undefined;
  let accepted: number | undefined;
  try {
    const response = await fetch(`${platform.base}/v1/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${platform.editorKey}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ content: 'go' }),
      signal: AbortSignal.timeout(LOAD_TIMEOUT_MS),
    });
    if (response.status !== 200)
      throw new Error(`stream answered ${response.status}: ${await response.text()}`);
    accepted = now() - start;
    onOpen();
    await readSse(response, (event: SseEvent) => {
      if (event.event === 'message.delta') {
        if (times.length === 0) firstAtEpoch = Date.now();
        times.push(event.at);
      }
      if (event.event === 'turn.completed') return (completed = true);
      return event.event === 'turn.failed' || event.event === 'turn.cancelled';
    });
  } catch (error) {
    // A stream that failed or timed out counts as not completed.
    failure = error instanceof Error ? error.message.slice(0, 160) : String(error);
  }
  if (!completed && failure === undefined)
    failure = `stream ended after ${times.length} tokens without turn.completed`;
  return {
    times,
    ttft: (times[0] ?? Number.NaN) - start,
    gaps: gapsOf(times),
    tokens: times.length,
    completed,
    sentAtEpoch,
    firstAtEpoch,
    ...(accepted !== undefined ? { accepted } : {}),
    ...(failure !== undefined ? { failure } : {}),
  };
}

async function createConversation(platform: BenchPlatform): Promise<string> {
  const response = await fetch(`${platform.base}/v1/conversations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.editorKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId: 'bench' }),
  });
  if (response.status !== 201)
    throw new Error(`create answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** Creates `n` conversations, `parallel` at a time. */
async function createConversations(platform: BenchPlatform, n: number, parallel = 20): Promise<string[]> {
  const ids: string[] = [];
  while (ids.length < n) {
    const batch = Math.min(parallel, n - ids.length);
    ids.push(...(await Promise.all(Array.from({ length: batch }, () => createConversation(platform)))));
  }
  return ids;
}

interface OverheadFigures {
  direct: StreamTiming[];
  gateway: StreamTiming[];
  /** Gateway POST → the fake received the model request (ms, Date.now resolution). */
  turnStart: number[];
  /** The fake received the model request → first delta at the client (ms). */
  providerToClient: number[];
  /** Per token: the delta on NATS (seen by a subscriber next to the gateway) → the SSE frame at the client. */
  relay: number[];
}

/** Per token of one streamed conversation: SSE arrival minus NATS arrival (same clock, this process). */
const relayOf = (tap: DeltaTap, conversationId: string, timing: StreamTiming): number[] => {
  const onNats = tap.arrivals.get(conversationId) ?? [];
  return timing.times.slice(0, onNats.length).map((at, i) => at - onNats[i]!);
};

async function measureOverhead(
  platform: BenchPlatform,
  fake: FakeOpenAI,
  tap: DeltaTap,
): Promise<OverheadFigures> {
  const figures: OverheadFigures = {
    direct: [],
    gateway: [],
    turnStart: [],
    providerToClient: [],
    relay: [],
  };
  const conversations = await createConversations(platform, ROUNDS + WARMUP);
  const shape = { chunkSize: TOKEN_CHARS, chunkDelayMs: TOKEN_MS };
  for (let round = 0; round < ROUNDS + WARMUP; round++) {
    const keep = round >= WARMUP;
    const runDirect = async () => {
      fake.script(fakeReply.text(TEXT, shape));
      const timing = await direct(fake);
      if (keep) figures.direct.push(timing);
    };
    const runGateway = async () => {
      fake.script(fakeReply.text(TEXT, shape));
      const before = fake.requests.length;
      const timing = await throughGateway(platform, conversations[round]!);
      const modelRequest = fake.requests.slice(before).find((r) => r.path.endsWith('/chat/completions'));
      if (!keep) return;
      figures.gateway.push(timing);
      figures.relay.push(...relayOf(tap, conversations[round]!, timing));
      if (modelRequest && timing.firstAtEpoch > 0) {
        figures.turnStart.push(modelRequest.receivedAt - timing.sentAtEpoch);
        figures.providerToClient.push(timing.firstAtEpoch - modelRequest.receivedAt);
      }
    };
    // Rotate who goes first so neither drift nor order favours one.
    if (round % 2 === 0) {
      await runDirect();
      await runGateway();
    } else {
      await runGateway();
      await runDirect();
    }
  }
  return figures;
}

interface LoadFigures {
  timings: StreamTiming[];
  relay: number[];
  /** The gateway's hop per token with the store in memory, one stream at a time (before the load). */
  relayAlone: number[];
  wallMs: number;
  rssBefore: number;
  rssPeak: number;
  rssAfter: number;
  /** Most streams open at once and the RSS sampled then. */
  maxOpen: number;
  rssAtMaxOpen: number;
  /** The gateway's heap after a full GC: before the load, and once with `heapOpen` turn streams open. */
  heapBefore: number;
  heapWithTurns: number;
  heapOpen: number;
  /** The same with idle events feeds: none, then `STREAMS` open on finished conversations. */
  idleHeap: IdleHeap;
  /** CPU ms used during the load: by each platform process, and by the whole machine (all its work). */
  cpu: {
    services: Record<string, number>;
    machine: number;
    /** PostgreSQL transactions committed in the run's FerretDB database (≈ its commands), when known. */
    transactions?: number;
    /** FerretDB's commands served during the load, by command name, when known. */
    commands?: Map<string, number>;
    /** PostgreSQL table scans during the load, by FerretDB collection, when known. */
    scans?: Map<string, number>;
  };
  /** The load's start → each model request the fake received during it, ms (Date.now resolution). */
  modelRequests: number[];
}

/**
 * `work`, with the gateway's CPU profile written to BENCH_GATEWAY_CPU_PROFILE when that is set,
 * and the agent's next to it (`<path>.agent.cpuprofile`).
 */
const profiled = <T>(platform: BenchPlatform, work: () => Promise<T>): Promise<T> => {
  const path = process.env.BENCH_GATEWAY_CPU_PROFILE;
  if (!path) return work();
  return platform.services.reduce<() => Promise<T>>((inner, service) => {
    if (!service.inspectorUrl) return inner;
    const file = service === platform.gateway ? path : `${path}.${service.name}.cpuprofile`;
    return () => cpuProfileDuring(service.inspectorUrl!, file, inner);
  }, work)();
};

/**
 * CPU ms each platform process, this client (parsing every stream), the run's FerretDB (when its
 * process is found by its port) and the whole machine use while `work` runs.
 */
async function cpuDuring<T>(
  platform: BenchPlatform,
  infra: BenchInfra,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: LoadFigures['cpu'] }> {
  const ferretdb = await pidListeningOn(Number(new URL(infra.mongoUrl).port));
  const watched = [
    ...platform.services.map((service) => ({ name: service.name, pid: service.pid })),
    ...(ferretdb !== undefined ? [{ name: 'FerretDB', pid: ferretdb }] : []),
  ];
  const of = () => Promise.all(watched.map(({ pid }) => cpuMsOf(pid).catch(() => Number.NaN)));
  const postgres = ferretDbPostgres(infra.mongoSource);
  const database = () => (postgres ? postgresWorkOf(postgres.database) : Promise.resolve(undefined));
  const mongoPort = Number(new URL(infra.mongoUrl).port);
  const commands = () =>
    ferretdb !== undefined ? ferretDbCommandsOf(ferretdb, mongoPort) : Promise.resolve(undefined);
  const client = process.cpuUsage();
  const [before, machineBefore, databaseBefore] = [await of(), await machineBusyMsOf(), await database()];
  const commandsBefore = await commands();
  const result = await work();
  const [after, machineAfter, databaseAfter] = [await of(), await machineBusyMsOf(), await database()];
  const commandsAfter = await commands();
  const used = process.cpuUsage(client);
  const services = Object.fromEntries([
    ...watched.map(({ name }, i) => [name, after[i]! - before[i]!] as const),
    ['this client', (used.user + used.system) / 1000] as const,
  ]);
  if (databaseBefore && databaseAfter) {
    // Backends open before and after (FerretDB's pool): what they used in between, a lower bound.
    let backendsMs = 0;
    for (const [pid, ms] of databaseAfter.backends)
      backendsMs += ms - (databaseBefore.backends.get(pid) ?? ms);
    services['PostgreSQL backends'] = backendsMs;
  }
  const transactions =
    databaseBefore && databaseAfter ? databaseAfter.transactions - databaseBefore.transactions : undefined;
  const scans =
    databaseBefore && databaseAfter
      ? new Map(
          [...databaseAfter.scans].map(([name, n]) => [name, n - (databaseBefore.scans.get(name) ?? 0)]),
        )
      : undefined;
  const served =
    commandsBefore && commandsAfter
      ? new Map([...commandsAfter].map(([name, n]) => [name, n - (commandsBefore.get(name) ?? 0)]))
      : undefined;
  return {
    result,
    cpu: {
      services,
      machine: machineAfter - machineBefore,
      ...(transactions !== undefined ? { transactions } : {}),
      ...(served ? { commands: served } : {}),
      ...(scans ? { scans } : {}),
    },
  };
}

interface IdleHeap {
  before: number;
  withFeeds: number;
  open: number;
}

/** The gateway's heap after a GC (its inspector), NaN when it has none. */
const heapOf = (platform: BenchPlatform): Promise<number> =>
  platform.gateway.inspectorUrl
    ? heapUsedAfterGc(platform.gateway.inspectorUrl)
    : Promise.resolve(Number.NaN);

/**
 * The gateway's own heap per idle open stream: `GET .../events` held open on each conversation
 * (read to the end of its log, then waiting), the heap after a GC with none and with all open.
 */
async function measureIdleFeeds(platform: BenchPlatform, conversations: string[]): Promise<IdleHeap> {
  const before = await heapOf(platform);
  const stop = new AbortController();
  let open = 0;
  const feeds = conversations.map(async (id) => {
    const response = await fetch(`${platform.base}/v1/conversations/${id}/events`, {
      headers: { authorization: `Bearer ${platform.editorKey}`, accept: 'text/event-stream' },
      signal: stop.signal,
    });
    if (response.status !== 200) return;
    open++;
    await readSse(response, () => undefined).catch(() => undefined);
  });
  for (let waited = 0; open < conversations.length && waited < 30_000; waited += 200)
    await new Promise((resolve) => setTimeout(resolve, 200));
  // Each feed has read its conversation's log and waits for more.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const withFeeds = await heapOf(platform);
  const opened = open;
  stop.abort();
  await Promise.allSettled(feeds);
  return { before, withFeeds, open: opened };
}

async function measureLoad(
  platform: BenchPlatform,
  infra: BenchInfra,
  fake: FakeOpenAI,
  tap: DeltaTap,
): Promise<LoadFigures> {
  // First, one stream at a time: the gateway's hop per token when the store is in memory.
  const relayAlone: number[] = [];
  for (const [i, id] of (await createConversations(platform, 10 + WARMUP)).entries()) {
    fake.script(fakeReply.text(TEXT, { chunkSize: TOKEN_CHARS, chunkDelayMs: TOKEN_MS }));
    const timing = await throughGateway(platform, id);
    if (i >= WARMUP) relayAlone.push(...relayOf(tap, id, timing));
  }
  const conversations = await createConversations(platform, STREAMS);
  for (let i = 0; i < STREAMS; i++) {
    fake.script(
      fakeReply.text(LOAD_TEXT, {
        chunkSize: TOKEN_CHARS,
        chunkDelayMs: LOAD_TOKEN_MS,
      }),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const heapBefore = await heapOf(platform);
  const rssBefore = await rssOf(platform.gateway.pid);
  let open = 0;
  let maxOpen = 0;
  let rssAtMaxOpen = rssBefore;
  let rssPeak = rssBefore;
  let [heapWithTurns, heapOpen] = [Number.NaN, 0];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const rss = await rssOf(platform.gateway.pid).catch(() => 0);
      rssPeak = Math.max(rssPeak, rss);
      if (open > maxOpen) [maxOpen, rssAtMaxOpen] = [open, rss];
      else if (open === maxOpen) rssAtMaxOpen = Math.max(rssAtMaxOpen, rss);
      // With the most streams open (sampled again each time 10 % more are): the heap (live
      // objects) they hold, in-flight frames included.
      if (open >= heapOpen + STREAMS / 10) [heapOpen, heapWithTurns] = [open, await heapOf(platform)];
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  const started = now();
  const [startedAtEpoch, requestsBefore] = [Date.now(), fake.requests.length];
  const { result: timings, cpu } = await cpuDuring(platform, infra, () =>
    profiled(platform, () =>
      Promise.all(
        conversations.map(async (id) => {
          // Open from the response headers to the end of the stream.
          let opened = false;
          try {
            return await throughGateway(platform, id, () => {
              opened = true;
              open++;
            });
          } finally {
            if (opened) open--;
          }
        }),
      ),
    ),
  );
  const wallMs = now() - started;
  const modelRequests = fake.requests
    .slice(requestsBefore)
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => r.receivedAt - startedAtEpoch);
  sampling = false;
  await sampler;
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const rssAfter = await rssOf(platform.gateway.pid);
  const relay = timings.flatMap((timing, i) => relayOf(tap, conversations[i]!, timing));
  const idleHeap = await measureIdleFeeds(platform, conversations);
  return {
    timings,
    relay,
    relayAlone,
    wallMs,
    rssBefore,
    rssPeak,
    rssAfter,
    maxOpen,
    rssAtMaxOpen,
    heapBefore,
    heapWithTurns,
    heapOpen,
    idleHeap,
    cpu,
    modelRequests,
  };
}

/**
 * Where the load's first tokens wait: the agent accepting the message (POST → response headers,
 * which the gateway sends once SubmitMessage returned), then the turn reaching the model (the
 * load's start → each model request the fake received), then the first token at the client.
 */
const firstTokenSplitOf = (load: LoadFigures): string => {
  const accepted = summarize(load.timings.flatMap((t) => (t.accepted === undefined ? [] : [t.accepted])));
  const requests = summarize(load.modelRequests);
  // A turn whose client was answered an error but that the agent accepted all the same still runs.
  const refusedYetRun =
    load.modelRequests.length - load.timings.filter((t) => t.accepted !== undefined).length;
  return `${STREAMS} streams, first token split: POST → accepted (response headers: SubmitMessage done) p50 ${f(accepted.p50)} / p99 ${f(accepted.p99)} ms (n ${accepted.n}); the load's start → the fake receives a model request p50 ${f(requests.p50)} / p99 ${f(requests.p99)} ms (n ${requests.n}${refusedYetRun > 0 ? `: ${refusedYetRun} more than the streams answered 200, turns run for clients told otherwise` : ''}).`;
};

/** Where the load's CPU went: per process and per turn, and the machine's busy share. */
const cpuNote = (load: LoadFigures): string => {
  const perTurn = (ms: number) => (ms / STREAMS).toFixed(1);
  const services = Object.entries(load.cpu.services)
    .map(([name, ms]) => `${name} ${(ms / 1000).toFixed(1)} s (${perTurn(ms)} ms per turn)`)
    .join(', ');
  const busy = (100 * load.cpu.machine) / (load.wallMs * cpus().length);
  const transactions =
    load.cpu.transactions !== undefined
      ? ` PostgreSQL committed ${load.cpu.transactions} transactions in the run's database (${perTurn(load.cpu.transactions)} per turn, about one per FerretDB command).`
      : '';
  const commands = load.cpu.commands
    ? [...load.cpu.commands]
        .filter(([, n]) => n > 0)
        .sort((x, y) => y[1] - x[1])
        .map(([name, n]) => `${name} ${perTurn(n)}`)
        .join(', ')
    : undefined;
  const scans = load.cpu.scans
    ? [...load.cpu.scans]
        .filter(([, n]) => n > 0)
        .sort((x, y) => y[1] - x[1])
        .slice(0, 8)
        .map(([name, n]) => `${name} ${perTurn(n)}`)
        .join(', ')
    : undefined;
  const served =
    (commands
      ? ` FerretDB commands per turn during the load: ${commands} (its debug metrics, every client's).`
      : '') + (scans ? ` PostgreSQL table scans per turn, by collection: ${scans}.` : '');
  return `CPU during the load: ${services}; the machine (${cpus().length} cores: these, PostgreSQL, NATS and any other work on it) was busy ${busy.toFixed(0)} % of the wall time, ${perTurn(load.cpu.machine)} ms per turn.${transactions}${served}`;
};

/** Heap bytes per stream between two GC'd heaps, in KB. */
const kbPerStream = (before: number, after: number, n: number): string =>
  n > 0 && Number.isFinite(before) && Number.isFinite(after)
    ? ((after - before) / n / 1024).toFixed(1)
    : 'n/a';

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const f = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(2));

const row = (scenario: string, variant: string, values: number[]): Row => {
  const s = summarize(values);
  return { scenario, variant, n: s.n, p50Ms: s.p50, p99Ms: s.p99 };
};

async function run(infra: BenchInfra): Promise<BenchReport> {
  const fake = await startFakeOpenAI();
  try {
    const overhead = LOAD_ONLY
      ? { direct: [], gateway: [], turnStart: [], providerToClient: [], relay: [] }
      : await withPlatform(startBenchPlatform(infra, fake.url, 32), infra, (platform, tap) =>
          measureOverhead(platform, fake, tap),
        );
    const loadPlatform =
      LOAD_ON === 'dev'
        ? startDevPlatform(infra, fake.url, STREAMS)
        : startBenchPlatform(infra, fake.url, STREAMS, LOAD_AGENTS);
    const load = await withPlatform(loadPlatform, infra, (platform, tap) =>
      measureLoad(platform, infra, fake, tap),
    );
    const report = reportOf(overhead, load, infra);
    await writeFile(RESULTS, markdownOf(report, overhead, load, infra));
    return report;
  } finally {
    await fake.close();
  }
}

/** Runs `measure` on a started platform with a deltas tap, and stops both. */
async function withPlatform<T>(
  starting: Promise<BenchPlatform>,
  infra: BenchInfra,
  measure: (platform: BenchPlatform, tap: DeltaTap) => Promise<T>,
): Promise<T> {
  const platform = await starting;
  try {
    const tap = await tapDeltas(infra, platform);
    try {
      return await measure(platform, tap);
    } finally {
      await tap.close();
    }
  } finally {
    await platform.stop();
  }
}

function reportOf(overhead: OverheadFigures, load: LoadFigures, infra: BenchInfra): BenchReport {
  const ttftDirect = summarize(overhead.direct.map((t) => t.ttft));
  const ttftGateway = summarize(overhead.gateway.map((t) => t.ttft));
  const gapDirect = summarize(overhead.direct.flatMap((t) => t.gaps));
  const gapGateway = summarize(overhead.gateway.flatMap((t) => t.gaps));
  const completed = load.timings.filter((t) => t.completed).length;
  const loadGaps = summarize(load.timings.flatMap((t) => t.gaps));
  const loadTtft = summarize(load.timings.filter((t) => t.tokens > 0).map((t) => t.ttft));
  const perStream = load.maxOpen > 0 ? (load.rssAtMaxOpen - load.rssBefore) / load.maxOpen : Number.NaN;
  const rows: Row[] = [
    row(
      'time to first token',
      'raw',
      overhead.direct.map((t) => t.ttft),
    ),
    {
      ...row(
        'time to first token',
        'keel',
        overhead.gateway.map((t) => t.ttft),
      ),
      ratio: ttftGateway.p50 / ttftDirect.p50,
    },
    row(
      'gap between tokens',
      'raw',
      overhead.direct.flatMap((t) => t.gaps),
    ),
    {
      ...row(
        'gap between tokens',
        'keel',
        overhead.gateway.flatMap((t) => t.gaps),
      ),
      ratio: gapGateway.p50 / gapDirect.p50,
    },
    row('token: delta on NATS → SSE frame at the client', 'keel', overhead.relay),
    row(
      LOAD_ON === 'dev' ? 'same, store in memory (npm start), one stream' : 'same, load platform, one stream',
      'keel',
      load.relayAlone,
    ),
    row(
      `${STREAMS} streams: time to first token`,
      'keel',
      load.timings.filter((t) => t.tokens > 0).map((t) => t.ttft),
    ),
    row(
      `${STREAMS} streams: gap between tokens`,
      'keel',
      load.timings.flatMap((t) => t.gaps),
    ),
    row(`${STREAMS} streams: delta on NATS → SSE frame at the client`, 'keel', load.relay),
  ];
  return {
    name: 'gateway-stream',
    title: 'Gateway streaming: overhead vs reading the provider directly, and 500 concurrent streams',
    description: [
      `Gateway, agent, tools, pricing and audit as separate processes; the fake OpenAI server streams ${TOKENS} tokens of ${TOKEN_CHARS} characters, ${TOKEN_MS} ms apart; raw = the same fake read directly in this process, interleaved, ${ROUNDS} turns each after ${WARMUP} warm-up rounds.`,
      LOAD_ON === 'dev'
        ? `Load: ${STREAMS} turns streamed at once through one gateway (${LOAD_TOKENS} tokens, ${LOAD_TOKEN_MS} ms apart; \`npm start\`'s one process (gateway, agent, tools, audit, pricing) with the store in memory and the bus on NATS, the agent allowing ${STREAMS} model steps at once; the RSS is the whole process's, an upper bound of the gateway's).`
        : `Load: ${STREAMS} turns streamed at once through one gateway (${LOAD_TOKENS} tokens, ${LOAD_TOKEN_MS} ms apart), gateway, ${LOAD_AGENTS === 1 ? 'agent' : `${LOAD_AGENTS} agents (the gateway's calls balanced over them)`}, tools, pricing and audit as separate processes on the run's store (${infra.mongoBackend}) and NATS, ${LOAD_AGENTS === 1 ? 'the agent' : 'each agent'} allowing ${STREAMS} model steps at once; the RSS is the gateway process's own.`,
      process.env.BENCH_GATEWAY_BUDGET_USD
        ? `The tenant has a monthly budget of ${process.env.BENCH_GATEWAY_BUDGET_USD} USD (BENCH_GATEWAY_BUDGET_USD): every turn is admitted by a reservation on its month's budget stream.`
        : 'The tenant has no budget (admission reserves nothing; each ended turn is still settled on its month).',
      ...(LOAD_ONLY ? ['Overhead rounds not run (BENCH_GATEWAY_ONLY=load): their rows are empty.'] : []),
    ],
    rows,
    notes: [
      `Added time to first token (p50): ${f(ttftGateway.p50 - ttftDirect.p50)} ms (goal < 5 ms): POST → the fake receives the agent's model request p50 ${f(summarize(overhead.turnStart).p50)} ms (the turn's commands, events and the agent's pick-up), then → first delta at the client p50 ${f(summarize(overhead.providerToClient).p50)} ms vs the direct first token p50 ${f(ttftDirect.p50)} ms.`,
      `Added per token (p50 of the gaps): ${f(gapGateway.p50 - gapDirect.p50)} ms (goal < 1 ms); p99 ${f(gapGateway.p99)} vs ${f(gapDirect.p99)} ms. Tokens seen per turn: gateway ${overhead.gateway[0]?.tokens ?? 0}, direct ${overhead.direct[0]?.tokens ?? 0}.`,
      `The gateway's own hop per token (the delta on NATS, as a subscriber next to it sees it → the SSE frame parsed by the client): p50 ${f(summarize(overhead.relay).p50)} / p99 ${f(summarize(overhead.relay).p99)} ms alone on FerretDB, p50 ${f(summarize(load.relayAlone).p50)} / p99 ${f(summarize(load.relayAlone).p99)} ms alone on the load platform (${LOAD_ON === 'dev' ? 'store in memory' : 'the same processes and store'}) (a delta that names a log version the feed has already sent is written without a store read; the feed reads the log first only when a delta is ahead of it, and every poll interval), p50 ${f(summarize(load.relay).p50)} / p99 ${f(summarize(load.relay).p99)} ms with ${STREAMS} streams (the client parsing ${STREAMS} streams shares this process's CPU).`,
      `${STREAMS} streams: ${completed}/${STREAMS} completed (${((100 * completed) / STREAMS).toFixed(1)} %) in ${(load.wallMs / 1000).toFixed(1)} s; time to first token p50 ${f(loadTtft.p50)} / p99 ${f(loadTtft.p99)} ms; token gaps p50 ${f(loadGaps.p50)} / p99 ${f(loadGaps.p99)} ms (the fake pauses ${LOAD_TOKEN_MS} ms).`,
      ...failuresOf(load.timings),
      firstTokenSplitOf(load),
      cpuNote(load),
      `Gateway RSS: ${mb(load.rssBefore)} MB before, ${mb(load.rssAtMaxOpen)} MB with ${load.maxOpen} streams open (peak ${mb(load.rssPeak)} MB), ${mb(load.rssAfter)} MB 2 s after: ≈ ${(perStream / 1024).toFixed(0)} KB per open stream (the RSS keeps what the heap grew to under load, garbage included).`,
      `Gateway heap after a full GC (its inspector): ${mb(load.heapBefore)} MB before, ${mb(load.heapWithTurns)} MB with ${load.heapOpen} turn streams open (tokens in flight): ${kbPerStream(load.heapBefore, load.heapWithTurns, load.heapOpen)} KB per open turn stream; ${mb(load.idleHeap.before)} → ${mb(load.idleHeap.withFeeds)} MB with ${load.idleHeap.open} idle events feeds open: ${kbPerStream(load.idleHeap.before, load.idleHeap.withFeeds, load.idleHeap.open)} KB per idle stream.`,
    ],
  };
}

/** The reasons streams did not complete, most frequent first. */
const failuresOf = (timings: StreamTiming[]): string[] => {
  const counts = new Map<string, number>();
  for (const t of timings) if (t.failure) counts.set(t.failure, (counts.get(t.failure) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([reason, n]) => `Not completed (${n}): ${reason}`);
};

function markdownOf(
  report: BenchReport,
  overhead: OverheadFigures,
  load: LoadFigures,
  infra: BenchInfra,
): string {
  const lines = [
    `# ${report.title}`,
    '',
    `_Measured ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} on ${machineLine(infra)}; \`npm run bench -- gateway-stream\`._`,
    '',
    ...report.description.map((d) => `${d}`),
    '',
    '| scenario | variant | n | p50 ms | p99 ms | keel/raw p50 |',
    '| --- | --- | --- | --- | --- | --- |',
    ...report.rows.map(
      (r) =>
        `| ${r.scenario} | ${r.variant} | ${r.n} | ${f(r.p50Ms)} | ${f(r.p99Ms)} | ${r.ratio ? `${r.ratio.toFixed(2)}x` : ''} |`,
    ),
    '',
    '| first token split (gateway) | n | p50 ms | p99 ms |',
    '| --- | --- | --- | --- |',
    `| POST → fake receives the model request | ${overhead.turnStart.length} | ${f(summarize(overhead.turnStart).p50)} | ${f(summarize(overhead.turnStart).p99)} |`,
    `| fake receives the request → first delta at the client | ${overhead.providerToClient.length} | ${f(summarize(overhead.providerToClient).p50)} | ${f(summarize(overhead.providerToClient).p99)} |`,
    '',
    '| load | value |',
    '| --- | --- |',
    `| streams completed | ${load.timings.filter((t) => t.completed).length} / ${STREAMS} |`,
    `| wall time | ${(load.wallMs / 1000).toFixed(1)} s |`,
    `| gateway RSS before / with ${load.maxOpen} open / peak / after | ${mb(load.rssBefore)} / ${mb(load.rssAtMaxOpen)} / ${mb(load.rssPeak)} / ${mb(load.rssAfter)} MB |`,
    `| memory per open stream (RSS) | ${((load.rssAtMaxOpen - load.rssBefore) / Math.max(1, load.maxOpen) / 1024).toFixed(0)} KB |`,
    `| gateway heap after GC: before / with ${load.heapOpen} turn streams open | ${mb(load.heapBefore)} / ${mb(load.heapWithTurns)} MB (${kbPerStream(load.heapBefore, load.heapWithTurns, load.heapOpen)} KB per stream) |`,
    `| gateway heap after GC: none / ${load.idleHeap.open} idle events feeds open | ${mb(load.idleHeap.before)} / ${mb(load.idleHeap.withFeeds)} MB (${kbPerStream(load.idleHeap.before, load.idleHeap.withFeeds, load.idleHeap.open)} KB per stream) |`,
    '',
    ...report.notes.map((n) => `- ${n}`),
    '',
  ];
  return lines.join('\n');
}

/** `npm run bench -- gateway-stream`. */
export const gatewayStreamBench: Bench = { name: 'gateway-stream', needsNats: true, run };
