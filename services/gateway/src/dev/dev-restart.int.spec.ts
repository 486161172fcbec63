// `npm start` on real servers (MONGODB_URL and NATS_URL set): the first start makes the dev
// tenant, key and demo agent; a restart finds them and prints the same key; a provider key in
// the environment moves the demo agent to that provider's model, and the banner says so.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox, SERVICE_NAMES } from '@keel/runtime';
import { freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const OPERATOR_KEY = `op_${uniqueName('devrestart')}`;

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
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      GRPC_PORT: '',
    };
    for (const service of SERVICE_NAMES) env[`${service.toUpperCase()}_GRPC_PORT`] = String(await freePort());
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One `npm start` until its banner: the key it printed, what it created, then Ctrl-C. */
  const start = async (extra: Record<string, string> = {}) => {
    const handle = await startProcess({
      name: 'dev',
      entry: 'services/gateway/src/dev.ts',
      env: { ...env, ...extra },
      readyLine: /^Ctrl-C stops it/,
      readyTimeoutMs: 60_000,
    });
    const banner = handle.stderrLines.join('\n');
    const key = /KEEL_KEY=(\S+)/.exec(banner)?.[1] ?? '';
    const setup = JSON.parse(await handle.waitForLine(/"msg":"dev tenant ready"/)) as { created: string[] };
    const url = `http://127.0.0.1:${env.PORT}`;
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
