import type { EventData, RecordedEvent } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
} from '@keel/core';
import type { ToolCallExecuted, ToolDefinition } from '@keel/events';
import { EgressPolicy, SecretBox, createLogger } from '@keel/runtime';
import { eventually } from '@keel/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InMemoryToolCallLedger, WebhookExecutor, verifySignature } from '../execution/index.js';
import { startTestWebhook } from '../execution/testing/webhook-server.js';
import type { TestWebhook } from '../execution/testing/webhook-server.js';
import { TenantToolsCache } from './tenant-tools.js';
import { ToolCallConsumer } from './tool-call.consumer.js';
import type { ToolCallConsumerOptions } from './tool-call.consumer.js';

const TENANT = 'acme';
const SECRET = 'whsec_consumer_unit_secret';
const ACTOR = { keyId: 'key-editor', role: 'editor', userId: 'user-7' };

let store: InMemoryEventStore;
let bus: InMemoryEventBus;
let relay: OutboxRelay;
let hook: TestWebhook;
let box: SecretBox;
let ledger: InMemoryToolCallLedger;
let logLines: string[];
let busWarnings: string[];
let consumers: ToolCallConsumer[];
let counter = 0;

const tool = (name: string, overrides: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: `${name} for tests`,
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  kind: 'webhook',
  url: hook.url,
  approval: 'never',
  roles: ['editor'],
  phases: [],
  timeoutMs: 2_000,
  ...overrides,
});

const startConsumer = async (options: ToolCallConsumerOptions = {}): Promise<ToolCallConsumer> => {
  const consumer = new ToolCallConsumer(
    {
      store,
      bus,
      ledger,
      // The test webhooks listen on loopback: opened on purpose, as KEEL_EGRESS_ALLOW would.
      webhooks: new WebhookExecutor({
        baseDelayMs: 5,
        maxDelayMs: 20,
        egress: EgressPolicy.fromAllowList('127.0.0.0/8'),
      }),
      tenantTools: new TenantToolsCache(store),
      secrets: box,
      logger: createLogger('tools', { level: 'debug', destination: { write: (l) => logLines.push(l) } }),
    },
    { backoffMs: [20], ackWaitMs: 2_000, ...options },
  );
  await consumer.start();
  consumers.push(consumer);
  return consumer;
};

beforeEach(async () => {
  store = new InMemoryEventStore();
  busWarnings = [];
  bus = new InMemoryEventBus({
    logger: { warn: (_f, m) => busWarnings.push(m ?? ''), error: (_f, m) => busWarnings.push(m ?? '') },
  });
  relay = new OutboxRelay({
    store,
    bus,
    checkpoints: new InMemoryCheckpointStore(),
    leases: new InMemoryLeaseStore(),
    idleMs: 5,
  });
  relay.start();
  hook = await startTestWebhook(SECRET);
  hook.reply((r) => ({ status: 200, body: JSON.stringify({ forecast: 'sunny', nth: r.nthForKey }) }));
  box = new SecretBox(SecretBox.generateKey());
  ledger = new InMemoryToolCallLedger();
  logLines = [];
  consumers = [];
  await store.append(TENANT, `tenantconfig-${TENANT}`, [
    { type: 'ToolConfigured', data: { tool: tool('get_weather'), at: 'now' } },
    { type: 'ToolConfigured', data: { tool: tool('refund', { approval: 'always' }), at: 'now' } },
    { type: 'WebhookSecretRotated', data: { secret: box.seal(SECRET, `${TENANT}/webhook`), at: 'now' } },
  ]);
  await startConsumer();
});

afterEach(async () => {
  await Promise.all(consumers.map((c) => c.stop({ graceMs: 0 })));
  await relay.stop();
  await bus.close();
  await hook.close();
});

interface Call {
  conversationId: string;
  turnId: string;
  toolCallId: string;
}

/** Appends a ToolCallRequested (and its ApprovalRequested when approval is required), as the agent does. */
const requestCall = async (
  name: string,
  args: unknown,
  options: { approvalRequired?: boolean; conversationId?: string; turnId?: string } = {},
): Promise<Call> => {
  const n = ++counter;
  const call = {
    conversationId: options.conversationId ?? `conv-${n}`,
    turnId: options.turnId ?? `turn-${n}`,
    toolCallId: `call-${n}`,
  };
  const approvalRequired = options.approvalRequired ?? false;
  const events: EventData[] = [
    {
      type: 'ToolCallRequested',
      data: { turnId: call.turnId, toolCallId: call.toolCallId, name, args, approvalRequired, at: 'now' },
    },
  ];
  if (approvalRequired) {
    events.push({
      type: 'ApprovalRequested',
      data: {
        turnId: call.turnId,
        approvalId: `approval-${n}`,
        toolCallId: call.toolCallId,
        name,
        args,
        requestedAt: 'now',
      },
    });
  }
  await appendTo(call, events, `req-${n}`);
  return call;
};

const appendTo = async (call: Call, events: EventData[], correlationId: string): Promise<void> => {
  await store.append(
    TENANT,
    `conversation-${call.conversationId}`,
    events.map((e) => ({ ...e, metadata: { correlationId, actor: ACTOR } })),
  );
};

const decide = (call: Call, decision: 'approve' | 'deny', correlationId = 'req-decision') =>
  appendTo(
    call,
    [
      {
        type: 'ApprovalDecided',
        data: {
          turnId: call.turnId,
          approvalId: `approval-${call.toolCallId.slice('call-'.length)}`,
          toolCallId: call.toolCallId,
          decision,
          by: 'user-7',
          at: 'now',
        },
      },
    ],
    correlationId,
  );

const recorded = (call: Call): Promise<RecordedEvent[]> => store.read(TENANT, `toolcall-${call.toolCallId}`);

/** The call's ToolCallExecuted, once it is in the log. */
const outcomeOf = (call: Call): Promise<RecordedEvent<'ToolCallExecuted', ToolCallExecuted['data']>> =>
  eventually(async () => {
    const events = await recorded(call);
    expect(events).toHaveLength(1);
    return events[0] as RecordedEvent<'ToolCallExecuted', ToolCallExecuted['data']>;
  });

/** A call that runs to completion after `call`'s trigger: once it is recorded, the consumer has had `call`'s trigger too. */
const settle = async (): Promise<void> => {
  const sentinel = await requestCall('calculator', { expression: '1+1' });
  await outcomeOf(sentinel);
  await new Promise((resolve) => setTimeout(resolve, 50));
};

describe('ToolCallConsumer', () => {
  it('runs a requested webhook call once, signed, and records ToolCallExecuted with its result', async () => {
    const call = await requestCall('get_weather', { city: 'Lyon' });

    const outcome = await outcomeOf(call);
    expect(outcome.data).toMatchObject({
      toolCallId: call.toolCallId,
      conversationId: call.conversationId,
      turnId: call.turnId,
      name: 'get_weather',
      ok: true,
      result: { forecast: 'sunny', nth: 1 },
      attempts: 1,
    });
    expect(outcome.data.durationMs).toBeGreaterThanOrEqual(0);
    expect(outcome.metadata).toMatchObject({ correlationId: `req-${counter}`, actor: ACTOR });
    expect(outcome.streamName).toBe(`toolcall-${call.toolCallId}`);

    expect(hook.requests).toHaveLength(1);
    const [received] = hook.requests;
    expect(received?.headers['idempotency-key']).toBe(call.toolCallId);
    expect(
      verifySignature(SECRET, received?.body ?? '', received?.headers['x-keel-signature'] as string),
    ).toBe(true);
    expect(JSON.parse(received?.body ?? '')).toEqual({
      toolCallId: call.toolCallId,
      conversationId: call.conversationId,
      tenantId: TENANT,
      args: { city: 'Lyon' },
    });
  });

  it('waits for the approval of a call that needs one, then runs it', async () => {
    const call = await requestCall('refund', { city: 'Paris' }, { approvalRequired: true });
    await settle();
    expect(hook.countFor(call.toolCallId)).toBe(0);
    expect(await recorded(call)).toEqual([]);

    await decide(call, 'approve', 'req-approval');
    const outcome = await outcomeOf(call);
    expect(outcome.data).toMatchObject({ ok: true, name: 'refund', result: { forecast: 'sunny', nth: 1 } });
    expect(outcome.metadata.correlationId).toBe('req-approval');
    expect(hook.countFor(call.toolCallId)).toBe(1);
  });

  it('never runs a denied call', async () => {
    const call = await requestCall('refund', { city: 'Paris' }, { approvalRequired: true });
    await decide(call, 'deny');
    await settle();
    expect(hook.countFor(call.toolCallId)).toBe(0);
    expect(await recorded(call)).toEqual([]);
    expect(await ledger.get({ tenantId: TENANT, toolCallId: call.toolCallId })).toBeUndefined();
  });

  it('runs the built-in calculator in process, without a webhook', async () => {
    const call = await requestCall('calculator', { expression: '(3 + 4) * 2' });
    const outcome = await outcomeOf(call);
    expect(outcome.data).toMatchObject({ ok: true, name: 'calculator', result: { result: 14 }, attempts: 1 });
    expect(hook.requests).toHaveLength(0);
  });

  it('records bad arguments and unknown tools as tool errors without calling anything', async () => {
    const bad = await requestCall('get_weather', { town: 'Lyon' });
    const unknown = await requestCall('teleport', {});
    expect((await outcomeOf(bad)).data).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
    expect((await outcomeOf(unknown)).data).toMatchObject({ ok: false, error: { code: 'unknown_tool' } });
    expect(hook.requests).toHaveLength(0);
  });

  it('records a call needing approval that was requested without one as approval_required, running nothing', async () => {
    const call = await requestCall('refund', { city: 'Paris' }, { approvalRequired: false });
    expect((await outcomeOf(call)).data).toMatchObject({ ok: false, error: { code: 'approval_required' } });
    expect(hook.countFor(call.toolCallId)).toBe(0);
  });

  it('does not call the webhook again when the trigger is delivered again', async () => {
    // The first delivery fails after the webhook answered (the log refuses the outcome once), so the
    // bus redelivers; the ledger answers the redelivery.
    const append = store.append.bind(store);
    let refused = 0;
    store.append = async (tenantId, stream, events, options) => {
      if (stream.startsWith('toolcall-') && refused++ === 0) throw new Error('the log is unavailable');
      return append(tenantId, stream, events, options);
    };
    const call = await requestCall('get_weather', { city: 'Oslo' });
    const outcome = await outcomeOf(call);
    expect(refused).toBe(2);
    expect(busWarnings).toContain('event handler failed; will redeliver');
    expect(outcome.data).toMatchObject({ ok: true, result: { nth: 1 } });

    // And a consumer reading the same events anew (a second durable) finds the outcome recorded.
    await startConsumer({ name: 'tools-again' });
    await settle();
    expect(hook.countFor(call.toolCallId)).toBe(1);
    expect(await recorded(call)).toHaveLength(1);
  });

  it('records a webhook failing with 500 three times as ok: false after 3 attempts', async () => {
    hook.reply(() => ({ status: 500, body: 'boom' }));
    const call = await requestCall('get_weather', { city: 'Rome' });
    const outcome = await outcomeOf(call);
    expect(outcome.data).toMatchObject({ ok: false, attempts: 3, error: { code: 'webhook_status_500' } });
    expect(hook.countFor(call.toolCallId)).toBe(3);
  });

  it('aborts a running webhook call when its turn is cancelled, and records nothing', async () => {
    hook.reply(() => ({ hang: 'before-headers' }));
    const call = await requestCall('get_weather', { city: 'Bern' });
    const received = await eventually(() => {
      expect(hook.requests).toHaveLength(1);
      return hook.requests[0]!;
    });

    // As the agent cancels: TurnCancelled first, then the ephemeral signal.
    await appendTo(
      call,
      [
        {
          type: 'TurnCancelled',
          data: { turnId: call.turnId, by: 'user-7', withdrawnApprovals: [], at: 'now' },
        },
      ],
      'req-cancel',
    );
    bus.ephemeral.publish(
      { kind: 'cancel', tenantId: TENANT, conversationId: call.conversationId },
      { turnId: call.turnId },
    );
    await received.closed;
    expect(received.abortedByClient()).toBe(true);

    hook.reply(() => ({ status: 200, body: '{}' }));
    await settle();
    expect(await recorded(call)).toEqual([]);
    expect(hook.countFor(call.toolCallId)).toBe(1); // not redelivered
    expect(busWarnings).toEqual([]);
  });

  it('skips a call whose turn was cancelled before it was taken', async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    const call = await requestCall('get_weather', { city: 'Kyiv' });
    await appendTo(
      call,
      [
        {
          type: 'TurnCancelled',
          data: { turnId: call.turnId, by: 'user-7', withdrawnApprovals: [], at: 'now' },
        },
      ],
      'req-cancel',
    );
    await startConsumer();
    await settle();
    expect(hook.countFor(call.toolCallId)).toBe(0);
    expect(await recorded(call)).toEqual([]);
  });

  it('hands a call back when stopped mid-webhook; the next instance completes it under the same key', async () => {
    hook.reply((r) =>
      r.nthForKey === 1 ? { hang: 'before-headers' } : { status: 200, body: '{"done":true}' },
    );
    const [first] = consumers;
    const call = await requestCall('get_weather', { city: 'Riga' });
    await eventually(() => expect(hook.countFor(call.toolCallId)).toBe(1));

    await first?.stop({ graceMs: 20 });
    expect(await recorded(call)).toEqual([]);

    await startConsumer();
    const outcome = await outcomeOf(call);
    expect(outcome.data).toMatchObject({ ok: true, result: { done: true } });
    expect(hook.requests.map((r) => r.idempotencyKey)).toEqual([call.toolCallId, call.toolCallId]);
  });

  it('uses a tool changed after the tenant was first read', async () => {
    const first = await requestCall('get_weather', { city: 'Lyon' });
    await outcomeOf(first);
    await store.append(TENANT, `tenantconfig-${TENANT}`, [
      { type: 'ToolConfigured', data: { tool: tool('get_weather', { approval: 'always' }), at: 'now' } },
    ]);
    const second = await requestCall('get_weather', { city: 'Lyon' });
    expect((await outcomeOf(second)).data).toMatchObject({ ok: false, error: { code: 'approval_required' } });
  });

  it('logs each call with its tenant, conversation, correlation and call ids, never its args or the secret', async () => {
    const call = await requestCall('get_weather', { city: 'Secretville-4711' });
    await outcomeOf(call);
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'tool call executed',
        level: 'info',
        tenantId: TENANT,
        conversationId: call.conversationId,
        correlationId: `req-${counter}`,
        toolCallId: call.toolCallId,
        ok: true,
      }),
    );
    const all = logLines.join('\n');
    expect(all).not.toContain('Secretville-4711');
    expect(all).not.toContain(SECRET);
  });
});
