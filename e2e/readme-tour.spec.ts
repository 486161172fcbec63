// The README's 5-minute tour, run as written: its ```sh blocks marked `<!-- tour -->`, in order,
// with bash and curl against `npm start` (apps/dev/src/main.ts on the in-memory store and
// bus, as after a fresh `npm install`). Two blocks are the user's own: the `export` line is the
// one the banner printed, and the webhook is the test's (it checks Keel's signature).
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { SERVICE_NAMES } from '@keel/runtime';
import { freePort, repoRoot, startProcess } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findGrpcurl } from './support/grpcurl.js';
import { startWebhookServer } from './support/webhook-server.js';

interface TourBlock {
  kind: 'exports' | 'webhook' | 'step';
  code: string;
}

/** The tour's blocks, in README order. */
const tourBlocks = async (): Promise<TourBlock[]> => {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
  return [...readme.matchAll(/<!-- tour(?:: (\w+))? -->\n```sh\n([\s\S]*?)```/g)].map((match) => ({
    kind: (match[1] ?? 'step') as TourBlock['kind'],
    code: match[2] ?? '',
  }));
};

/** Every `NAME=` the tour assigns (plain or exported): the state carried from block to block. */
const assignedNames = (blocks: TourBlock[]): string[] => [
  ...new Set(
    blocks.flatMap((block) =>
      [...block.code.matchAll(/(?:^|\s)([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1] ?? ''),
    ),
  ),
];

const shellQuote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

interface Frame {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

const framesOf = (text: string): Frame[] =>
  text.split(/\n\n+/).flatMap((chunk) => {
    const field = (name: string) => new RegExp(`^${name}: ?(.*)$`, 'm').exec(chunk)?.[1];
    const event = field('event');
    if (!event) return [];
    const data = field('data');
    return [
      { id: field('id') ?? '', event, data: data ? (JSON.parse(data) as Record<string, unknown>) : {} },
    ];
  });

describe('the README tour', () => {
  const vars = new Map<string, string>();
  let blocks: TourBlock[];
  let names: string[];
  let dir: string;
  let webhook: Awaited<ReturnType<typeof startWebhookServer>>;
  let banner: string;
  let dev: Awaited<ReturnType<typeof startProcess>>;
  let gatewayGrpcPort = '';

  /** Runs one block with bash in the tour's directory, with the variables earlier blocks set. */
  const run = (code: string): Promise<{ stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const restore = [...vars].map(([name, value]) => `export ${name}=${shellQuote(value)}`).join('\n');
      const report = names.map((name) => `printf '%s=%s\\n' ${name} "\${${name}-}"`).join('\n');
      const script = `${restore}\n${code}\nprintf '\\n@@@vars\\n'\n${report}\n`;
      const child = spawn('bash', ['-c', script], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('error', reject);
      child.on('close', () => {
        clearTimeout(timer);
        const [output = '', state = ''] = stdout.split('\n@@@vars\n');
        for (const line of state.split('\n')) {
          const at = line.indexOf('=');
          if (at > 0 && line.slice(at + 1) !== '') vars.set(line.slice(0, at), line.slice(at + 1));
        }
        resolve({ stdout: output, stderr });
      });
    });

  const step = async (index: number): Promise<string> => {
    const block = blocks.filter((b) => b.kind === 'step')[index];
    if (!block) throw new Error(`the README tour has no step ${index + 1}`);
    const { stdout, stderr } = await run(block.code);
    expect(stderr, `step ${index + 1} wrote to stderr`).toBe('');
    return stdout;
  };

  /** The banner's copy-paste commands (the curls and the grpcurl), one line each as the reader pastes them. */
  const bannerCommands = (): string[] =>
    (banner.slice(banner.indexOf('CONV=$(')).split('\n\n')[0] ?? '').replace(/^ {2}/gm, '').split(/\n(?! )/);

  beforeAll(async () => {
    blocks = await tourBlocks();
    names = assignedNames(blocks);
    dir = await mkdtemp(join(tmpdir(), 'keel-tour-'));
    webhook = await startWebhookServer();
    const env: Record<string, string> = {
      MONGODB_URL: '',
      NATS_URL: '',
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      GRPC_PORT: '',
      KEEL_OPERATOR_KEY: '',
      KEEL_DEV_KEY: '',
      KEEL_DEV_MODEL: '',
      OPENAI_API_KEY: '',
      ANTHROPIC_API_KEY: '',
      GOOGLE_API_KEY: '',
    };
    for (const service of SERVICE_NAMES) env[`${service.toUpperCase()}_GRPC_PORT`] = String(await freePort());
    gatewayGrpcPort = env.GATEWAY_GRPC_PORT ?? '';
    dev = await startProcess({
      name: 'npm-start',
      entry: 'apps/dev/src/main.ts',
      env,
      readyLine: /^Ctrl-C stops it/,
    });
    banner = dev.stderrLines.join('\n');
  });

  afterAll(async () => {
    await webhook?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('npm start prints the URL, the keys and a curl that streams a turn of the demo agent', async () => {
    expect(banner).toMatch(/Keel dev mode ready in \d+\.\d s \(store: memory, bus: memory\)/);
    expect(banner).toContain('demo agent    "demo" on demo:keel-demo');
    // Loopback is opened to webhooks in the dev mode (the tour's webhook runs on this machine).
    expect(banner).toContain('egress        public addresses and loopback 127.0.0.0/8,::1/128');
    const exportLine =
      banner
        .split('\n')
        .find((line) => line.trim().startsWith('export KEEL_URL='))
        ?.trim() ?? '';
    const curl = bannerCommands()
      .filter((line) => !line.startsWith('grpcurl '))
      .join('\n');
    const { stdout } = await run(`${exportLine}\n${curl}`);
    const frames = framesOf(stdout);
    expect(frames.map((frame) => frame.event)).toEqual(
      expect.arrayContaining([
        'turn.started',
        'tool.call',
        'tool.result',
        'message.completed',
        'turn.completed',
      ]),
    );
    expect(frames.find((frame) => frame.event === 'tool.result')?.data).toMatchObject({
      name: 'calculator',
      ok: true,
      result: { result: 42 },
    });
    expect(frames.at(-1)?.event).toBe('turn.completed');
  });

  it("npm start prints the gateway's gRPC address and a grpcurl line that lists the conversation", async () => {
    const grpcPort = /^ {2}gRPC {10}127\.0\.0\.1:(\d+) /m.exec(banner)?.[1];
    expect(grpcPort).toBe(gatewayGrpcPort);
    const exportLine =
      banner
        .split('\n')
        .find((line) => line.trim().startsWith('export KEEL_URL='))
        ?.trim() ?? '';
    const grpcurlLine = bannerCommands().find((line) => line.startsWith('grpcurl ')) ?? '';
    expect(grpcurlLine).toContain('keel.conversations.v1.ConversationService/ListConversations');
    // grpcurl as the reader has it: on PATH (e2e/support/grpcurl.ts finds it, or fails saying how to install it).
    const bin = await findGrpcurl();
    const { stdout, stderr } = await run(
      `${exportLine}\nPATH=${shellQuote(dirname(bin))}:$PATH\n${grpcurlLine}`,
    );
    expect(stderr).toBe('');
    // The conversation the banner's curl created, found through reflection alone.
    const listed = JSON.parse(stdout) as { data?: Array<{ agentId: string; status: string }> };
    expect(listed.data?.map((conversation) => conversation.agentId)).toEqual(['demo']);
  });

  it("the tour's first blocks are the banner's export line and a webhook URL", async () => {
    const [exports, hook] = blocks;
    expect(exports?.kind).toBe('exports');
    const printed =
      banner
        .split('\n')
        .find((line) => line.trim().startsWith('export KEEL_URL='))
        ?.trim() ?? '';
    const shape = (line: string) => [...line.matchAll(/([A-Z_]+)=/g)].map((m) => m[1]);
    expect(shape(exports?.code ?? '')).toEqual(shape(printed));
    await run(printed); // what the reader pastes
    expect(vars.get('KEEL_URL')).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    expect(hook?.kind).toBe('webhook');
    expect(hook?.code).toMatch(/^export WEBHOOK_URL=http:\/\/\S+$/m);
    await run(`export WEBHOOK_URL=${webhook.url}`); // the test's webhook stands in for the reader's
  });

  it('1: the operator creates a tenant and its admin key', async () => {
    const out = await step(0);
    expect(out).toMatch(/^tenant tn_\w+, admin key keel_/m);
    expect(vars.get('ADMIN')).toMatch(/^keel_/);
  });

  it('2: the admin sets a webhook secret, a webhook tool that needs approval, and an agent', async () => {
    const [tool, agent] = (await step(1))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(tool).toMatchObject({ name: 'refund', kind: 'webhook', url: webhook.url, approval: 'always' });
    expect(agent).toMatchObject({ id: 'support', model: 'demo:keel-demo', tools: ['refund', 'calculator'] });
    webhook.setSecret(vars.get('SECRET') ?? '');
  });

  it('3: the streamed turn pauses at approval.required and the webhook is not called', async () => {
    const frames = framesOf(await step(2));
    const events = frames.map((frame) => frame.event);
    expect(events.slice(0, 1)).toEqual(['turn.started']);
    expect(events).toContain('approval.required');
    expect(events).not.toContain('tool.result');
    expect(events).not.toContain('turn.completed');
    expect(frames.find((frame) => frame.event === 'tool.call')?.data).toMatchObject({
      name: 'refund',
      args: { order: 'A-1', amount: 20 },
    });
    // The context frame the README shows carries the model's window as the stream does.
    const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
    const shownWindow = /"windowTokens":(\w+)/.exec(readme)?.[1];
    const context = frames.find((frame) => frame.event === 'context');
    expect(String(context?.data.windowTokens)).toBe(shownWindow);
    expect(webhook.hits).toEqual([]);
  });

  it('4: approving answers the decision', async () => {
    const decided = JSON.parse((await step(3)).trim()) as Record<string, unknown>;
    expect(decided).toEqual({ approvalId: vars.get('APPROVAL'), decision: 'approve' });
  });

  it('5: the resumed stream starts right after the last event seen and ends with the turn', async () => {
    const seen = framesOf(await readFile(join(dir, 'turn.sse'), 'utf8'));
    const frames = framesOf(await step(4));
    const lastVersion = Number((vars.get('LAST') ?? '').split('.')[0]);
    const durable = frames.filter((frame) => !frame.id.includes('.'));
    expect(lastVersion).toBe(Math.max(...seen.map((frame) => Number(frame.id.split('.')[0]))));
    expect(Number(durable[0]?.id)).toBe(lastVersion + 1); // no gap
    expect(durable.every((frame, index) => Number(frame.id) === lastVersion + 1 + index)).toBe(true); // no duplicate
    expect(durable.map((frame) => frame.event)).toEqual(
      expect.arrayContaining(['approval.decided', 'tool.result', 'message.completed', 'turn.completed']),
    );
    expect(durable.find((frame) => frame.event === 'tool.result')?.data).toMatchObject({
      name: 'refund',
      ok: true,
      result: { status: 'shipped', refunded: 20 },
    });
    expect(durable.find((frame) => frame.event === 'message.completed')?.data.text).toContain(
      '[demo] refund says:',
    );
    expect(durable.at(-1)?.event).toBe('turn.completed');
    expect(webhook.hits).toHaveLength(1);
    expect(webhook.hits[0]).toMatchObject({
      signatureValid: true,
      body: { args: { order: 'A-1', amount: 20 } },
    });
  });

  it("6: usage shows the tour's one turn on the demo model", async () => {
    const usage = JSON.parse(await step(5)) as {
      totals: { turns: number; promptTokens: number };
      rows: Array<{ key: string; turns: number }>;
    };
    expect(usage.totals.turns).toBe(1);
    expect(usage.totals.promptTokens).toBeGreaterThan(0);
    expect(usage.rows).toEqual([expect.objectContaining({ key: 'demo:keel-demo', turns: 1 })]);
  });

  it('Ctrl-C stops npm start cleanly', async () => {
    expect(await dev.kill('SIGINT', 15_000)).toEqual({ code: 0, signal: null });
  });
});
