// A platform for the turn stream end-to-end tests: an agent, a tools service and two gateway
// processes on one environment, the fake OpenAI server as the model, the webhook server as the
// tool; one tenant with an admin and an editor key, a `refund` webhook tool that needs approval
// and a `support` agent using it. Plus the HTTP and SSE helpers the tests share.
import type { FakeOpenAI, ProcessHandle, SseFrame } from '@keel/testkit';
import { freePort, openSse, startFakeOpenAI, uniqueName } from '@keel/testkit';
import { expect } from 'vitest';
import { platformEnv, startAgent, startGateway, startTools } from './platform.js';
import { startWebhookServer } from './webhook-server.js';

/** Whether a frame is an ephemeral one (`message.delta`, `context`: id `<version>.<seq>`). */
export const isDelta = (frame: SseFrame): boolean => frame.id!.includes('.');

/** The turn a frame names (undefined for `approval.decided`). */
export const turnOf = (frame: SseFrame): string | undefined => (frame.data as { turnId?: string }).turnId;

/** Starts the processes and configures the tenant; `stop` ends them all. */
export const startStreamingPlatform = async (name: string) => {
  const operatorKey = `op_${uniqueName(name)}`;
  const env = platformEnv(name, { KEEL_SSE_HEARTBEAT_MS: '500' });
  const fake: FakeOpenAI = await startFakeOpenAI();
  const webhook = await startWebhookServer();
  const agentPort = await freePort();
  const [portA, portB] = [await freePort(), await freePort()];
  const baseA = `http://127.0.0.1:${portA}`;
  const baseB = `http://127.0.0.1:${portB}`;
  const keys = { admin: '', editor: '' };
  const processes: ProcessHandle[] = await Promise.all([
    startAgent(env, agentPort, fake.url),
    startTools(env),
    startGateway(env, { port: portA, grpcPort: await freePort(), agentPort }, operatorKey, {
      name: 'gateway-a',
    }),
    startGateway(env, { port: portB, grpcPort: await freePort(), agentPort }, operatorKey, {
      name: 'gateway-b',
    }),
  ]);

  const post = (
    base: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async (response: Response) => (await response.json()) as Record<string, unknown>;
  const put = (path: string, body: unknown) =>
    fetch(`${baseA}${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${keys.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  /** Streams a message (`Accept: text/event-stream`) on gateway `base` with the editor key. */
  const streamMessage = (
    base: string,
    conversationId: string,
    body: string | Record<string, unknown>,
    headers: Record<string, string> = {},
  ) =>
    openSse(`${base}/v1/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.editor}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...headers,
      },
      body: JSON.stringify(typeof body === 'string' ? { content: body } : body),
    });

  /** Opens a conversation with the `support` agent; its id. */
  const conversation = async () => {
    const created = await post(baseA, '/v1/conversations', keys.editor, { agentId: 'support' });
    expect(created.status).toBe(201);
    return (await json(created)).id as string;
  };

  /** The conversation's durable frames from the log (events feed on `base`), read until `last` arrives. */
  const logFrames = async (base: string, conversationId: string, last: (f: SseFrame) => boolean) => {
    const feed = await openSse(`${base}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${keys.editor}` },
    });
    const frames = await feed.until(last);
    feed.close();
    return frames.filter((f) => !isDelta(f));
  };

  const tenant = await json(await post(baseA, '/v1/tenants', operatorKey, { name: 'Acme' }));
  const issue = async (role: string) =>
    (await json(await post(baseA, `/v1/tenants/${String(tenant.id)}/keys`, operatorKey, { role })))
      .key as string;
  keys.admin = await issue('admin');
  keys.editor = await issue('editor');
  webhook.setSecret((await json(await post(baseA, '/v1/webhook-secret', keys.admin))).secret as string);
  const tool = await put('/v1/tools/refund', {
    description: 'Refund an order',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    kind: 'webhook',
    url: webhook.url,
    approval: 'always',
    timeoutMs: 10_000,
  });
  expect(tool.status).toBe(200);
  const agent = await put('/v1/agents/support', {
    model: 'openai:gpt-4o-mini',
    tools: ['refund'],
    maxSteps: 4,
  });
  expect(agent.status).toBe(200);
  expect((await put('/v1/providers/openai', { baseUrl: fake.url })).status).toBe(200);

  const stop = async () => {
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake.close();
    await webhook.close();
  };
  return { baseA, baseB, keys, fake, webhook, post, json, streamMessage, conversation, logFrames, stop };
};

/** A running streaming platform and its helpers. */
export type StreamingPlatform = Awaited<ReturnType<typeof startStreamingPlatform>>;
