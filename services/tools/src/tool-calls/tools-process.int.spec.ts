// The tools service as a separate process on real NATS and MongoDB: it takes tool calls from the
// conversation events it reads off the bus, calls the tenant's webhook once per call, records
// ToolCallExecuted, and survives a kill -9 in the middle of a webhook call without doing the
// call's effect twice.
import type { EventStore, RecordedEvent } from '@keel/core';
import { DataKeyring, EventSealer, sealingStore } from '@keel/core';
import { MongoDataKeyStore, MongoEventStore } from '@keel/core/mongodb';
import type { ToolCallExecuted, ToolDefinition } from '@keel/events';
import { SecretBox, conversationKeyStream } from '@keel/runtime';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoToolCallLedger } from '../execution/index.js';
import { startTestWebhook } from '../execution/testing/webhook-server.js';
import type { TestWebhook } from '../execution/testing/webhook-server.js';

const TENANT = 'acme';
const SECRET = 'whsec_tools_process_secret';
const SHUTDOWN_TIMEOUT_MS = 6_000;
const ACK_WAIT_MS = 3_000;

const { natsUrl } = testInfra();
const mongoUrl = mongoUrlFor(uniqueName('toolsproc'));
const natsStream = uniqueName('TOOLS');
const subjectPrefix = `test.${uniqueName('tools')}`;
const masterKey = SecretBox.generateKey();

let store: MongoEventStore;
/** The log as the services read it: a tool call's outcome is sealed with its conversation's key. */
let opened: EventStore;
let ledger: MongoToolCallLedger;
let hook: TestWebhook;
let counter = 0;
/** Keys whose first request the webhook holds without answering. */
const held = new Set<string>();
/** What the webhook did, once per Idempotency-Key (like a payment API): the effect and its result. */
const effects = new Map<string, { charge: number }>();

const startTools = async (): Promise<ProcessHandle> =>
  startProcess({
    name: 'tools',
    entry: 'services/tools/src/main.ts',
    env: {
      MONGODB_URL: mongoUrl,
      NATS_URL: natsUrl,
      KEEL_NATS_STREAM: natsStream,
      KEEL_SUBJECT_PREFIX: subjectPrefix,
      GRPC_PORT: String(await freePort()),
      KEEL_MASTER_KEY: masterKey,
      // The test webhooks listen on loopback: opened on purpose (the egress policy refuses it otherwise).
      KEEL_EGRESS_ALLOW: '127.0.0.0/8,::1/128',
      // A call whose process died moves to another instance after this long without a sign of life.
      KEEL_TOOLS_ACK_WAIT_MS: String(ACK_WAIT_MS),
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      LOG_LEVEL: 'info',
    },
    readyLine: /"msg":"ready"/,
    readyTimeoutMs: 60_000,
  });

const refundTool: () => ToolDefinition = () => ({
  name: 'refund',
  description: 'Refunds an order',
  inputSchema: {
    type: 'object',
    properties: { orderId: { type: 'string' } },
    required: ['orderId'],
    additionalProperties: false,
  },
  kind: 'webhook',
  url: hook.url,
  approval: 'never',
  roles: ['editor'],
  phases: [],
  timeoutMs: 30_000,
});

/** Appends a ToolCallRequested to a new conversation, as the agent would. */
const requestRefund = async (orderId: string) => {
  const n = ++counter;
  const call = {
    conversationId: `conv-${n}-${uniqueName('c')}`,
    turnId: `turn-${n}`,
    toolCallId: uniqueName('call'),
  };
  await store.append(TENANT, `conversation-${call.conversationId}`, [
    {
      type: 'ToolCallRequested',
      data: {
        turnId: call.turnId,
        toolCallId: call.toolCallId,
        name: 'refund',
        args: { orderId },
        approvalRequired: false,
        at: new Date().toISOString(),
      },
      metadata: { correlationId: `req-${n}`, actor: { keyId: 'key-1', role: 'editor', userId: 'user-1' } },
    },
  ]);
  return call;
};

const executed = (toolCallId: string): Promise<RecordedEvent[]> =>
  opened.read(TENANT, `toolcall-${toolCallId}`);

const outcomeOf = (toolCallId: string, timeoutMs = 20_000) =>
  eventually(
    async () => {
      const events = await executed(toolCallId);
      expect(events).toHaveLength(1);
      return events[0] as RecordedEvent<'ToolCallExecuted', ToolCallExecuted['data']>;
    },
    { timeoutMs, intervalMs: 100 },
  );

const requestsFor = (key: string) => hook.requests.filter((r) => r.idempotencyKey === key);

beforeAll(async () => {
  store = await MongoEventStore.connect(mongoUrl);
  const keyring = new DataKeyring(new MongoDataKeyStore(store.db), Buffer.from(masterKey, 'base64'));
  opened = sealingStore(
    store,
    new EventSealer({ keyring, keyStream: conversationKeyStream, erasureType: 'ConversationDeleted' }),
  );
  ledger = new MongoToolCallLedger(store.db);
  hook = await startTestWebhook(SECRET);
  hook.reply((request) => {
    const key = request.idempotencyKey;
    let effect = effects.get(key);
    if (!effect) effects.set(key, (effect = { charge: effects.size + 1 }));
    if (held.has(key) && request.nthForKey === 1) return { hang: 'before-headers' };
    return { status: 200, body: JSON.stringify({ refunded: true, charge: effect.charge }) };
  });
  const box = new SecretBox(masterKey);
  await store.append(TENANT, `tenantconfig-${TENANT}`, [
    { type: 'ToolConfigured', data: { tool: refundTool(), at: new Date().toISOString() } },
    {
      type: 'WebhookSecretRotated',
      data: { secret: box.seal(SECRET, `${TENANT}/webhook`), at: new Date().toISOString() },
    },
  ]);
});

afterAll(async () => {
  await store?.db.dropDatabase().catch(() => undefined);
  await store?.close();
  await hook?.close();
});

describe('the tools service process', () => {
  it('executes a requested call once and records ToolCallExecuted; a kill -9 mid-webhook does not repeat the effect; SIGTERM exits 0', async () => {
    let tools = await startTools();

    // 1. A call runs once, signed, and its outcome lands in the log.
    const first = await requestRefund('order-1');
    const outcome = await outcomeOf(first.toolCallId);
    expect(outcome.data).toMatchObject({
      toolCallId: first.toolCallId,
      conversationId: first.conversationId,
      turnId: first.turnId,
      name: 'refund',
      ok: true,
      result: { refunded: true, charge: 1 },
      attempts: 1,
    });
    expect(outcome.metadata.correlationId).toBe('req-1');
    // As stored, the result is sealed: the log holds no clear copy of it.
    const [stored] = await store.read(TENANT, `toolcall-${first.toolCallId}`);
    expect(JSON.stringify(stored!.data)).not.toContain('refunded');
    expect(requestsFor(first.toolCallId)).toHaveLength(1);
    expect(requestsFor(first.toolCallId)[0]).toMatchObject({ signatureValid: true });
    expect(JSON.parse(requestsFor(first.toolCallId)[0]?.body ?? '')).toEqual({
      toolCallId: first.toolCallId,
      conversationId: first.conversationId,
      tenantId: TENANT,
      args: { orderId: 'order-1' },
    });

    // 2. kill -9 while the webhook holds the request: the call is in flight in the ledger, not recorded.
    const second = await requestRefund('order-2');
    held.add(second.toolCallId);
    await eventually(() => expect(requestsFor(second.toolCallId)).toHaveLength(1), { timeoutMs: 20_000 });
    expect(await tools.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await executed(second.toolCallId)).toEqual([]);
    expect(await ledger.get({ tenantId: TENANT, toolCallId: second.toolCallId })).toMatchObject({
      state: 'in-flight',
    });

    // 3. A new process takes the call over (after the bus's ack wait) and completes it under the same key.
    tools = await startTools();
    const restarted = Date.now();
    const resumed = await outcomeOf(second.toolCallId, 40_000);
    expect(Date.now() - restarted).toBeLessThan(ACK_WAIT_MS + 10_000);
    expect(resumed.data).toMatchObject({ ok: true, result: { refunded: true, charge: 2 } });
    const attempts = requestsFor(second.toolCallId);
    expect(attempts).toHaveLength(2);
    expect(
      attempts.every((r) => r.signatureValid && r.headers['idempotency-key'] === second.toolCallId),
    ).toBe(true);
    // The webhook's effect happened once per key: two calls, two charges, whatever was retried.
    expect([...effects.entries()]).toEqual([
      [first.toolCallId, { charge: 1 }],
      [second.toolCallId, { charge: 2 }],
    ]);
    expect(await executed(first.toolCallId)).toHaveLength(1);
    expect(await executed(second.toolCallId)).toHaveLength(1);

    // 4. SIGTERM with a webhook call held: the call is handed back, the process exits 0 in time.
    const third = await requestRefund('order-3');
    held.add(third.toolCallId);
    await eventually(() => expect(requestsFor(third.toolCallId)).toHaveLength(1), { timeoutMs: 20_000 });
    const stopping = Date.now();
    expect(await tools.kill('SIGTERM', SHUTDOWN_TIMEOUT_MS + 5_000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopping).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(await executed(third.toolCallId)).toEqual([]);

    // The next process resumes it at once (the delivery was handed back, no ack wait), then stops cleanly.
    tools = await startTools();
    expect((await outcomeOf(third.toolCallId)).data).toMatchObject({ ok: true, result: { charge: 3 } });
    expect(requestsFor(third.toolCallId).map((r) => r.idempotencyKey)).toEqual([
      third.toolCallId,
      third.toolCallId,
    ]);
    expect(await tools.kill('SIGTERM', SHUTDOWN_TIMEOUT_MS + 5_000)).toEqual({ code: 0, signal: null });
    expect(effects.size).toBe(3);
  }, 150_000);
});
