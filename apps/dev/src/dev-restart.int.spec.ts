// `npm start` on real servers (MONGODB_URL and NATS_URL set): the first start makes the dev
// tenant, key and demo agent; a restart finds them and prints the same key; a provider key in
// the environment moves the demo agent to that provider's model, and the banner says so.
// Without KEEL_MASTER_KEY the made-up master key is kept beside the dev key, so a webhook tool's
// sealed secret still signs its calls after a restart; a start on another database attached to
// the same event stream warns that the stream holds another store's events.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox, SERVICE_NAMES } from '@keel/runtime';
import type { FakeOpenAI } from '@keel/testkit';
import {
  eventually,
  fakeReply,
  freePort,
  lastUserMessageIncludes,
  mongoUrlFor,
  startFakeOpenAI,
  startProcess,
  testInfra,
  uniqueName,
} from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const OPERATOR_KEY = `op_${uniqueName('devrestart')}`;

/** Loopback ports of one npm start: HTTP, and each service's gRPC port (<SERVICE>_GRPC_PORT, GRPC_PORT unset). */
const devPorts = async (): Promise<Record<string, string>> => {
  const ports: Record<string, string> = { PORT: String(await freePort()), HOST: '127.0.0.1', GRPC_PORT: '' };
  for (const service of SERVICE_NAMES) ports[`${service.toUpperCase()}_GRPC_PORT`] = String(await freePort());
  return ports;
};

/** `npm start` with `env`, once its banner is out: the process, the banner, the dev key it printed and its URL. */
const startDev = async (env: Record<string, string>) => {
  const handle = await startProcess({
    name: 'dev',
    entry: 'apps/dev/src/main.ts',
    env,
    readyLine: /^Ctrl-C stops it/,
    readyTimeoutMs: 60_000,
  });
  const banner = handle.stderrLines.join('\n');
  const key = /KEEL_KEY=(\S+)/.exec(banner)?.[1] ?? '';
  return { handle, banner, key, url: `http://127.0.0.1:${env.PORT}` };
};

describe('npm start on MongoDB and NATS, restarted', () => {
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keel-dev-'));
    const name = uniqueName('devrestart');
    env = {
      MONGODB_URL: mongoUrlFor(name),
      NATS_URL: testInfra().natsUrl,
      KEEL_NATS_STREAM: name.toUpperCase(),
      KEEL_SUBJECT_PREFIX: `t.${name}`,
      KEEL_MASTER_KEY: SecretBox.generateKey(),
      KEEL_OPERATOR_KEY: OPERATOR_KEY,
      KEEL_OUTBOX_LEASE_MS: '1000',
      KEEL_DEV_KEY: '',
      KEEL_DEV_KEY_FILE: join(dir, 'dev-key'),
      KEEL_DEV_MODEL: '',
      OPENAI_API_KEY: '',
      ANTHROPIC_API_KEY: '',
      GOOGLE_API_KEY: '',
      ...(await devPorts()),
    };
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One `npm start` until its banner: the key it printed, what it created, then Ctrl-C. */
  const start = async (extra: Record<string, string> = {}) => {
    const { handle, banner, key, url } = await startDev({ ...env, ...extra });
    const setup = JSON.parse(await handle.waitForLine(/"msg":"dev tenant ready"/)) as { created: string[] };
    const agent = await fetch(`${url}/v1/agents/demo`, { headers: { authorization: `Bearer ${key}` } });
    const tenants = await fetch(`${url}/v1/tenants`, {
      headers: { authorization: `Bearer ${OPERATOR_KEY}` },
    });
    const result = {
      banner,
      key,
      created: setup.created,
      agent: { status: agent.status, body: (await agent.json()) as Record<string, unknown> },
      tenants: ((await tenants.json()) as { data: Array<{ name: string }> }).data,
    };
    expect(await handle.kill('SIGINT', 20_000)).toEqual({ code: 0, signal: null });
    return result;
  };

  it('creates the dev tenant, key and agent once, and prints the same key after a restart', async () => {
    const first = await start();
    expect(first.created).toEqual(['tenant', 'key', 'agent']);
    expect(first.banner).toContain('(store: mongodb, bus: nats)');
    expect(first.banner).toContain('new, saved in KEEL_DEV_KEY_FILE');
    expect(first.key).toMatch(/^keel_/);
    expect(first.agent).toMatchObject({
      status: 200,
      body: { id: 'demo', model: 'demo:keel-demo', tools: ['current_time', 'calculator'] },
    });
    expect((await stat(env.KEEL_DEV_KEY_FILE ?? '')).mode & 0o777).toBe(0o600);

    const second = await start();
    expect(second.created).toEqual([]);
    expect(second.key).toBe(first.key);
    expect(second.agent).toEqual(first.agent);
    expect(second.tenants.filter((tenant) => tenant.name === 'dev')).toHaveLength(1);

    const withOpenAi = await start({ OPENAI_API_KEY: 'sk-not-called' });
    expect(withOpenAi.created).toEqual(['agent']);
    expect(withOpenAi.key).toBe(first.key);
    expect(withOpenAi.banner).toContain('demo agent    "demo" on openai:gpt-4o-mini (OPENAI_API_KEY is set)');
    expect(withOpenAi.agent.body).toMatchObject({ id: 'demo', model: 'openai:gpt-4o-mini' });
    expect(withOpenAi.banner).not.toContain('sk-not-called');
  });
});

/** A webhook that answers 200 only to calls signed with `secret` (401 otherwise), and counts them. */
const startSignedWebhook = async () => {
  let secret = '';
  const calls: Array<{ signed: boolean }> = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const expected = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
      const signed = secret !== '' && request.headers['x-keel-signature'] === expected;
      calls.push({ signed });
      response
        .writeHead(signed ? 200 : 401, { 'content-type': 'application/json' })
        .end(JSON.stringify(signed ? { pong: true } : { error: 'bad signature' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    calls,
    setSecret: (value: string) => void (secret = value),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

describe('npm start on MongoDB and NATS without KEEL_MASTER_KEY, restarted', () => {
  let dir: string;
  let env: Record<string, string>;
  let fake: FakeOpenAI;
  let webhook: Awaited<ReturnType<typeof startSignedWebhook>>;
  const name = uniqueName('devmaster');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keel-dev-master-'));
    fake = await startFakeOpenAI();
    webhook = await startSignedWebhook();
    env = {
      MONGODB_URL: mongoUrlFor(name),
      NATS_URL: testInfra().natsUrl,
      KEEL_NATS_STREAM: name.toUpperCase(),
      KEEL_SUBJECT_PREFIX: `t.${name}`,
      KEEL_MASTER_KEY: '',
      KEEL_OPERATOR_KEY: OPERATOR_KEY,
      KEEL_OUTBOX_LEASE_MS: '1000',
      KEEL_DEV_KEY: '',
      KEEL_DEV_KEY_FILE: join(dir, 'dev-key'),
      KEEL_DEV_MODEL: '',
      KEEL_EGRESS_ALLOW: '127.0.0.0/8',
      OPENAI_API_KEY: 'sk-fake-dev',
      OPENAI_BASE_URL: fake.url,
      ANTHROPIC_API_KEY: '',
      GOOGLE_API_KEY: '',
      ...(await devPorts()),
    };
  });

  afterAll(async () => {
    await webhook?.close();
    await fake?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const start = async (extra: Record<string, string> = {}) => {
    const { handle, banner, key, url } = await startDev({ ...env, ...extra });
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    return { handle, banner, call };
  };

  /** Runs one turn in which the model calls the `ping` webhook tool; the tool message it produced. */
  const pingTurn = async (call: Awaited<ReturnType<typeof start>>['call'], text: string) => {
    fake.on(lastUserMessageIncludes(text), fakeReply.toolCall('ping', {}), fakeReply.text('pinged'));
    const created = await call('POST', '/v1/conversations', { agentId: 'pinger' });
    expect(created.status).toBe(201);
    const id = String(created.body.id);
    expect((await call('POST', `/v1/conversations/${id}/messages`, { content: text })).status).toBe(202);
    return eventually(
      async () => {
        const { body } = await call('GET', `/v1/conversations/${id}`);
        const messages = body.messages as Array<{ role: string; content: string }>;
        expect(body.status).toBe('idle');
        expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'pinged' });
        return messages.find((message) => message.role === 'tool');
      },
      { timeoutMs: 30_000 },
    );
  };

  it("keeps the made-up master key beside the dev key: a webhook tool's secret signs its calls after a restart", async () => {
    const first = await start();
    try {
      expect(first.banner).toContain(`master key    made up and kept in ${join(dir, 'master-key')} (0600)`);
      expect((await stat(join(dir, 'master-key'))).mode & 0o777).toBe(0o600);
      const secret = await first.call('POST', '/v1/webhook-secret');
      expect(secret.status).toBe(201);
      webhook.setSecret(String(secret.body.secret));
      const tool = await first.call('PUT', '/v1/tools/ping', {
        description: 'Ping the webhook',
        inputSchema: { type: 'object', properties: {} },
        kind: 'webhook',
        url: webhook.url,
        approval: 'never',
        timeoutMs: 5_000,
      });
      expect(tool.status).toBe(200);
      const agent = await first.call('PUT', '/v1/agents/pinger', {
        model: 'openai:gpt-4o-mini',
        tools: ['ping'],
        maxSteps: 4,
      });
      expect(agent.status).toBe(200);
      expect(await pingTurn(first.call, 'ping before the restart')).toMatchObject({
        content: '{"pong":true}',
      });
    } finally {
      expect(await first.handle.kill('SIGINT', 20_000)).toEqual({ code: 0, signal: null });
    }

    const second = await start();
    try {
      expect(second.banner).toContain(`master key    kept in ${join(dir, 'master-key')}`);
      expect(second.banner).not.toContain('WARNING');
      const tool = await pingTurn(second.call, 'ping after the restart');
      expect(tool?.content).toBe('{"pong":true}');
      expect(tool?.content).not.toContain('tool_misconfigured');
      expect(webhook.calls).toEqual([{ signed: true }, { signed: true }]);
    } finally {
      expect(await second.handle.kill('SIGINT', 20_000)).toEqual({ code: 0, signal: null });
    }
  });

  it("warns when the event stream holds another store's events (another database, the same stream)", async () => {
    const other = await start({ MONGODB_URL: mongoUrlFor(`${name}_other`) });
    try {
      expect(other.banner).toMatch(
        new RegExp(`WARNING +the JetStream stream ${name.toUpperCase()} holds the events of another store`),
      );
      const warned = other.handle.stdoutLines.find((line) =>
        line.includes('holds the events of another store'),
      );
      expect(JSON.parse(warned ?? '{}')).toMatchObject({ level: 'warn', stream: name.toUpperCase() });
    } finally {
      expect(await other.handle.kill('SIGINT', 20_000)).toEqual({ code: 0, signal: null });
    }
    // The stream's own store still starts without a warning.
    const own = await start();
    try {
      expect(own.banner).not.toContain('WARNING');
    } finally {
      expect(await own.handle.kill('SIGINT', 20_000)).toEqual({ code: 0, signal: null });
    }
  });
});
