// The events feed on real MongoDB and NATS: the gateway run as its own process, conversation
// events appended straight into the same MongoDB (as the agent would), deltas published on the
// bus's ephemeral channel, and the feed read over HTTP as a client would.
import type { EventData } from '@keel/core';
import { InMemoryDeadLetters, InMemoryInbox } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import { NatsEventBus } from '@keel/core/nats';
import type { ProcessHandle, SseFrame } from '@keel/testkit';
import { freePort, mongoUrlFor, openSse, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const OPERATOR_KEY = `op_${uniqueName('operator')}`;
const at = '2026-01-01T00:00:00.000Z';
let gateway: ProcessHandle;
let store: MongoEventStore;
let bus: NatsEventBus;
let base = '';
let tenantId = '';
let viewerKey = '';
let otherKey = '';
const conversationId = uniqueName('conv');
const stream = `conversation-${conversationId}`;

/** An open feed: frames parsed as they arrive. */
interface Feed {
  response: Response;
  frames: SseFrame[];
  /** Waits until `count` frames (comments excluded) have arrived, and returns them. */
  events(count: number, timeoutMs?: number): Promise<SseFrame[]>;
  close(): void;
}

const call = (
  path: string,
  key: string | undefined,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) =>
  fetch(`${base}${path}`, {
    headers: { ...headers, ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
    ...(signal ? { signal } : {}),
  });

const open = async (path: string, key: string, headers: Record<string, string> = {}): Promise<Feed> => {
  const stream = await openSse(`${base}${path}`, { headers: { ...headers, authorization: `Bearer ${key}` } });
  expect(stream.response.status).toBe(200);
  const events = async (count: number, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = stream.events();
      if (got.length >= count) return got;
      if (Date.now() > deadline) throw new Error(`expected ${count} frames, got ${JSON.stringify(got)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { response: stream.response, frames: stream.frames, events, close: stream.close };
};

const append = (events: EventData[]) => store.append(tenantId, stream, events);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const expectProblem = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(await response.json()).toMatchObject({ status, code });
};

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const port = await freePort();
  const env = {
    MONGODB_URL: mongoUrlFor(uniqueName('events_feed'), mongoUrl),
    NATS_URL: natsUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    GRPC_PORT: String(await freePort()),
    KEEL_OPERATOR_KEY: OPERATOR_KEY,
    KEEL_NATS_STREAM: uniqueName('FEED'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('feed')}`,
    KEEL_SSE_HEARTBEAT_MS: '300',
    LOG_LEVEL: 'info',
  };
  base = `http://127.0.0.1:${port}`;
  gateway = await startProcess({
    name: 'gateway',
    entry: 'services/gateway/src/main.ts',
    env,
    readyLine: /"msg":"ready"/,
  });
  store = await MongoEventStore.connect(env.MONGODB_URL);
  bus = await NatsEventBus.connect({
    servers: natsUrl,
    streamName: env.KEEL_NATS_STREAM,
    subjectPrefix: env.KEEL_SUBJECT_PREFIX,
    inbox: new InMemoryInbox(),
    deadLetters: new InMemoryDeadLetters(),
  });
  const operator = (path: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, string>>);
  tenantId = (await operator('/v1/tenants', { name: 'Acme' })).id!;
  viewerKey = (await operator(`/v1/tenants/${tenantId}/keys`, { role: 'viewer' })).key!;
  const other = (await operator('/v1/tenants', { name: 'Other' })).id!;
  otherKey = (await operator(`/v1/tenants/${other}/keys`, { role: 'admin' })).key!;
  await append([
    { type: 'ConversationCreated', data: { conversationId, agentId: 'a1', createdAt: at } },
    { type: 'UserMessageAdded', data: { messageId: 'm0', turnId: 'u1', content: 'hi', at } },
    {
      type: 'TurnStarted',
      data: { turnId: 'u1', agent: { agentId: 'a1', model: 'openai:x', maxSteps: 4 }, role: 'editor', at },
    },
    {
      type: 'AssistantMessageCompleted',
      data: {
        turnId: 'u1',
        step: 1,
        messageId: 'm1',
        text: '',
        toolCalls: [{ toolCallId: 'k1', name: 'w', args: { city: 'Oslo' } }],
        at,
      },
    },
    {
      type: 'ToolCallRequested',
      data: { turnId: 'u1', toolCallId: 'k1', name: 'w', args: { city: 'Oslo' }, approvalRequired: true, at },
    },
  ]);
});

afterAll(async () => {
  await bus?.close();
  await store?.close();
  await gateway?.kill('SIGTERM', 10_000);
});

describe('events feed (gateway process on MongoDB and NATS)', () => {
  it('streams the durable events from the start, then live ones once, then deltas as version.seq', async () => {
    const feed = await open(`/v1/conversations/${conversationId}/events`, viewerKey, {
      'x-request-id': 'req-feed-1',
    });
    expect(feed.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(feed.response.headers.get('x-request-id')).toBe('req-feed-1');
    expect(await feed.events(3)).toEqual([
      { id: '3', event: 'turn.started', data: { turnId: 'u1' } },
      { id: '4', event: 'message.completed', data: { turnId: 'u1', messageId: 'm1', text: '' } },
      {
        id: '5',
        event: 'tool.call',
        data: { turnId: 'u1', toolCallId: 'k1', name: 'w', args: { city: 'Oslo' } },
      },
    ]);

    await append([
      {
        type: 'ApprovalRequested',
        data: {
          turnId: 'u1',
          approvalId: 'p1',
          toolCallId: 'k1',
          name: 'w',
          args: { city: 'Oslo' },
          requestedAt: at,
        },
      },
      { type: 'PhaseChanged', data: { turnId: 'u1', from: 'a', to: 'b', toolCallId: 'k1', at } },
    ]);
    await append([
      {
        type: 'ApprovalDecided',
        data: { turnId: 'u1', approvalId: 'p1', toolCallId: 'k1', decision: 'approve', by: 'bob', at },
      },
    ]);
    const live = (await feed.events(5)).slice(3);
    expect(live).toEqual([
      {
        id: '6',
        event: 'approval.required',
        data: { turnId: 'u1', approvalId: 'p1', toolCallId: 'k1', name: 'w', args: { city: 'Oslo' } },
      },
      { id: '8', event: 'approval.decided', data: { approvalId: 'p1', decision: 'approve', by: 'bob' } },
    ]);

    const topic = { kind: 'deltas' as const, tenantId, conversationId };
    bus.ephemeral.publish(topic, { type: 'delta', turnId: 'u2', step: 1, seq: 1, text: 'Hel' });
    bus.ephemeral.publish(topic, { type: 'delta', turnId: 'u2', step: 1, seq: 2, text: 'lo' });
    bus.ephemeral.publish(topic, {
      type: 'context',
      turnId: 'u2',
      step: 1,
      contextTokens: 42,
      windowTokens: null,
    });
    expect((await feed.events(8)).slice(5)).toEqual([
      { id: '8.1', event: 'message.delta', data: { turnId: 'u2', text: 'Hel' } },
      { id: '8.2', event: 'message.delta', data: { turnId: 'u2', text: 'lo' } },
      { id: '8.2', event: 'context', data: { turnId: 'u2', contextTokens: 42, windowTokens: null } },
    ]);

    // Several poll rounds later: nothing sent twice, and heartbeats keep the stream alive.
    await pause(1_000);
    expect(feed.frames.filter((f) => f.comment === undefined)).toHaveLength(8);
    expect(feed.frames.some((f) => f.comment === 'ping')).toBe(true);
    feed.close();
  });

  it('resumes after ?after= and Last-Event-ID (version or version.seq) with no gap and no duplicate', async () => {
    const after = await open(`/v1/conversations/${conversationId}/events?after=4`, viewerKey);
    expect((await after.events(3)).map((f) => f.id)).toEqual(['5', '6', '8']);
    const resumed = await open(`/v1/conversations/${conversationId}/events`, viewerKey, {
      'last-event-id': '6.3',
    });
    expect((await resumed.events(1)).map((f) => f.id)).toEqual(['8']);
    await append([{ type: 'TurnCompleted', data: { turnId: 'u1', finishReason: 'stop', at } }]);
    const completed = {
      id: '9',
      event: 'turn.completed',
      data: { turnId: 'u1', finishReason: 'stop', affected: [] },
    };
    expect((await resumed.events(2))[1]).toEqual(completed);
    expect((await after.events(4))[3]).toEqual(completed);
    await pause(700);
    expect(resumed.frames.filter((f) => f.comment === undefined)).toHaveLength(2);
    expect(after.frames.filter((f) => f.comment === undefined)).toHaveLength(4);
    after.close();
    resumed.close();

    const atEnd = await open(`/v1/conversations/${conversationId}/events?after=9`, viewerKey);
    await pause(600);
    expect(atEnd.frames.filter((f) => f.comment === undefined)).toEqual([]);
    atEnd.close();
  });

  it("answers another tenant's key and an unknown conversation with 404, bad resume ids with 400, no key with 401", async () => {
    await expectProblem(await call(`/v1/conversations/${conversationId}/events`, otherKey), 404, 'not_found');
    await expectProblem(await call('/v1/conversations/conv_nope/events', viewerKey), 404, 'not_found');
    await expectProblem(
      await call(`/v1/conversations/${conversationId}/events`, viewerKey, { 'last-event-id': 'abc' }),
      400,
      'invalid_request',
    );
    await expectProblem(
      await call(`/v1/conversations/${conversationId}/events?after=-1`, viewerKey),
      400,
      'invalid_request',
    );
    await expectProblem(
      await call(`/v1/conversations/${conversationId}/events`, undefined),
      401,
      'unauthenticated',
    );
    await expectProblem(
      await call(`/v1/conversations/${conversationId}/events`, OPERATOR_KEY),
      403,
      'forbidden',
    );
  });

  it('shuts down cleanly and at once with a feed still open and another one left by its client', async () => {
    const left = await open(`/v1/conversations/${conversationId}/events`, viewerKey);
    await left.events(1);
    left.close();
    const feed = await open(`/v1/conversations/${conversationId}/events`, viewerKey);
    await feed.events(1);
    await pause(200);
    const started = Date.now();
    expect(await gateway.kill('SIGTERM', 10_000)).toEqual({ code: 0, signal: null });
    // No connection holds the HTTP close up (a client's fresh idle connection used to, for 4 s).
    expect(Date.now() - started).toBeLessThan(2_000);
    feed.close();
  });
});
