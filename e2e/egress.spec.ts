// Two attacks a tenant admin tried: a provider baseUrl that would receive the platform key, and
// webhooks aimed inside the platform. Reproduced against the platform as separate processes (gateway,
// agent, tools on real NATS and MongoDB) with KEEL_EGRESS_ALLOW empty, as in production: a tenant
// admin aims a provider baseUrl and webhook tools at a capture server on this machine, at cloud
// metadata and private literals, and at a name that resolves to this machine. Every one is
// refused — at PUT when the host is written as an address, at call time after resolution — and
// the capture server never receives a request, let alone the platform's OpenAI key.
import { promises as dns } from 'node:dns';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { EgressPolicy } from '@keel/runtime';
import { fakeReply, lastUserMessageIncludes } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayPlatform } from './support/gateway-platform.js';
import { startGatewayPlatform } from './support/gateway-platform.js';
import type { Answer } from './support/http.js';
import { answerOf, openTurnStream } from './support/http.js';

const PLATFORM_KEY = 'sk-platform-e2e-egress-5b7d1c';

/** What the capture server saw of one request. */
interface Captured {
  method: string;
  url: string;
  authorization: string | undefined;
}

describe('egress: platform keys and tenant-aimed calls (gateway, agent, tools as processes)', () => {
  let platform: GatewayPlatform;
  let capture: Server;
  let captured: Captured[];
  let port = 0;
  let editor = '';
  let admin = '';
  // A name this machine resolves to itself (loopback or its own private address).
  const ownName = hostname();

  const call = async (method: string, path: string, body?: unknown): Promise<Answer> =>
    answerOf(await platform.request(method, path, admin, body));

  /** A 400 whose detail starts with the field it names. */
  const refused = (answer: Answer, field: string) => {
    expect(answer.status, answer.text).toBe(400);
    expect(answer.body).toMatchObject({ status: 400 });
    expect((answer.body as { detail: string }).detail, answer.text).toMatch(new RegExp(`^${field}\\b`));
  };

  const tool = (url: string) => ({
    description: 'Looks an order up',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
    kind: 'webhook',
    url,
    approval: 'never',
    timeoutMs: 5_000,
  });

  /** Runs one turn of `agentId` with `content`; the durable frames of the turn stream. */
  const turn = async (agentId: string, content: string) => {
    const created = await platform.request('POST', '/v1/conversations', editor, { agentId });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const stream = await openTurnStream(platform.base, editor, id, { content });
    const frames = await stream.until(
      (f) => f.event === 'turn.completed' || f.event === 'turn.failed',
      60_000,
    );
    stream.close();
    return frames.filter((f) => f.event !== 'message.delta');
  };

  beforeAll(async () => {
    captured = [];
    capture = createServer((request, response) => {
      captured.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
      });
      request.resume();
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve));
    port = (capture.address() as AddressInfo).port;
    platform = await startGatewayPlatform('egress', {
      // Production settings: nothing opened; the platform's key and its own (fake) endpoint.
      env: { KEEL_EGRESS_ALLOW: '', OPENAI_API_KEY: PLATFORM_KEY },
    });
    const tenant = await platform.tenantWithKeys('Mallory', ['admin', 'editor'] as const);
    admin = tenant.keys.admin;
    editor = tenant.keys.editor;
  });

  afterAll(async () => {
    await platform?.stop();
    capture?.close();
  });

  it("(a) a provider baseUrl without the tenant's own apiKey: 400 naming apiKey", async () => {
    for (const provider of ['openai', 'anthropic']) {
      refused(
        await call('PUT', `/v1/providers/${provider}`, { baseUrl: 'https://llm.example.com/v1' }),
        'apiKey',
      );
      refused(
        await call('PUT', `/v1/providers/${provider}`, { baseUrl: `http://127.0.0.1:${port}/v1` }),
        'apiKey',
      );
    }
    // Google's client cannot be held to the egress policy: no tenant baseUrl at all.
    refused(
      await call('PUT', '/v1/providers/google', { apiKey: 'sk-tenant', baseUrl: 'https://llm.example.com' }),
      'baseUrl',
    );
  });

  it('(b) a provider baseUrl on a loopback, link-local or private literal: 400 naming baseUrl', async () => {
    const literals = [
      `http://127.0.0.1:${port}/v1`,
      `http://2130706433:${port}/v1`,
      `http://[::ffff:127.0.0.1]:${port}/v1`,
      `http://localhost:${port}/v1`,
      'http://169.254.169.254/v1',
      'http://10.0.0.1/v1',
      'http://[fd00::1]/v1',
    ];
    for (const baseUrl of literals) {
      refused(await call('PUT', '/v1/providers/openai', { apiKey: 'sk-tenant-own', baseUrl }), 'baseUrl');
      refused(await call('PUT', '/v1/providers/anthropic', { apiKey: 'sk-tenant-own', baseUrl }), 'baseUrl');
    }
    refused(await call('PUT', '/v1/providers/ollama', { baseUrl: 'http://169.254.169.254' }), 'baseUrl');
    refused(await call('PUT', '/v1/providers/ollama', { baseUrl: `http://127.0.0.1:${port}` }), 'baseUrl');
  });

  it('(c) a webhook tool on a loopback, metadata or private literal, in any spelling: 400 naming url', async () => {
    const literals = [
      `http://127.0.0.1:${port}/metrics`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.1.10/',
      'http://100.64.0.1/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      `http://[::ffff:127.0.0.1]:${port}/`,
      'http://[::1]/',
      `http://localhost:${port}/`,
      'http://LOCALHOST./',
      'http://0.0.0.0/',
    ];
    for (const url of literals) refused(await call('PUT', '/v1/tools/x', tool(url)), 'url');
    const listed = (await call('GET', '/v1/tools')).body as { data: Array<{ name: string }> };
    expect(listed.data.map((t) => t.name)).not.toContain('x');
  });

  it('(d) a webhook on a name that resolves to this machine: stored, then refused at call time', async () => {
    const addresses = await dns.lookup(ownName, { all: true });
    const policy = new EgressPolicy();
    expect(addresses.length).toBeGreaterThan(0);
    expect(
      addresses.some((a) => !policy.checkAddress(a.address).allowed),
      JSON.stringify(addresses),
    ).toBe(true);

    // A signed webhook, as a real tenant has: the call gets as far as the network.
    expect((await call('POST', '/v1/webhook-secret')).status).toBe(201);
    expect((await call('PUT', '/v1/tools/lookup', tool(`http://${ownName}:${port}/hook`))).status).toBe(200);
    const agent = await call('PUT', '/v1/agents/looker', {
      model: 'openai:gpt-4o-mini',
      tools: ['lookup'],
      maxSteps: 3,
    });
    expect(agent.status, agent.text).toBe(200);
    platform.fake.on(
      lastUserMessageIncludes('EGRESS-WEBHOOK'),
      fakeReply.toolCall('lookup', { id: 'A-1' }),
      fakeReply.text('The lookup was refused.'),
    );
    const frames = await turn('looker', 'EGRESS-WEBHOOK look up A-1');
    const result = frames.find((f) => f.event === 'tool.result')?.data as {
      ok: boolean;
      error?: { code: string; message: string };
    };
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'egress_denied',
        message: `egress to ${ownName.toLowerCase()} is refused: it resolves to an address that is not public`,
      },
    });
    expect(frames.at(-1)?.event).toBe('turn.completed');
    expect(captured).toEqual([]);
  });

  it('(e) a provider baseUrl on a name that resolves to this machine: the turn fails, no key leaves', async () => {
    const provider = await call('PUT', '/v1/providers/openai', {
      apiKey: 'sk-tenant-own-key',
      baseUrl: `http://${ownName}:${port}/v1`,
    });
    expect(provider.status, provider.text).toBe(200);
    const agent = await call('PUT', '/v1/agents/stealer', { model: 'openai:gpt-4o-mini', maxSteps: 2 });
    expect(agent.status, agent.text).toBe(200);
    const before = platform.fake.requests.length;

    const frames = await turn('stealer', 'EGRESS-PROVIDER hello');
    expect(frames.at(-1)).toMatchObject({
      event: 'turn.failed',
      data: {
        error: {
          code: 'egress_denied',
          message: `egress to ${ownName.toLowerCase()} is refused: it resolves to an address that is not public`,
        },
      },
    });
    // Neither the capture server nor the platform's own endpoint was called for this turn.
    expect(captured).toEqual([]);
    expect(platform.fake.requests.length).toBe(before);
  });

  it("the platform's own endpoint still serves tenants without a baseUrl, with the platform key", async () => {
    // Back to the platform's endpoint (no baseUrl): the platform key goes there, and only there.
    expect((await call('PUT', '/v1/providers/openai', {})).status).toBe(200);
    platform.fake.on(lastUserMessageIncludes('EGRESS-PLATFORM'), fakeReply.text('Hello from the platform.'));
    const before = platform.fake.requests.length;
    const frames = await turn('stealer', 'EGRESS-PLATFORM hello');
    expect(frames.at(-1)?.event).toBe('turn.completed');
    const sent = platform.fake.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((r) => r.authorization.last4 === PLATFORM_KEY.slice(-4))).toBe(true);
    expect(captured).toEqual([]);
  });
});
