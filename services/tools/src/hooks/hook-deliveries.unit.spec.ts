import type { EventData } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
} from '@keel/core';
import type { HookDefinition } from '@keel/events';
import { createLogger } from '@keel/runtime';
import { eventually } from '@keel/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HookDeliveries } from './hook-deliveries.js';
import { InMemoryHookLaneStore } from './hook-lanes.js';
import type { HookAnswer, HookSend } from './hook-sender.js';

const TENANT = 'acme';

let store: InMemoryEventStore;
let bus: InMemoryEventBus;
let relay: OutboxRelay;
let lanes: InMemoryHookLaneStore;
let deliveries: HookDeliveries[];
/** Every send, in order, with the conversation and version it carried. */
let sent: Array<HookSend & { conversationId: string; version: number }>;
/** How the fake hook answers a send (default: 200 without a body). */
let answer: (send: HookSend, nth: number) => HookAnswer;

const hookDef = (name: string, events: string[], extra: Partial<HookDefinition> = {}): HookDefinition => ({
  name,
  url: `https://hooks.example.com/${name}`,
  events,
  ...extra,
});

const configure = (...hooks: HookDefinition[]) =>
  store.append(
    TENANT,
    `tenantconfig-${TENANT}`,
    hooks.map((hook) => ({ type: 'HookConfigured', data: { hook, at: 'now' } })),
  );

const start = async () => {
  const delivery = new HookDeliveries(
    {
      store,
      bus,
      lanes,
      send: async (send) => {
        const body = JSON.parse(send.body) as { conversationId: string; version: number };
        sent.push({ ...send, conversationId: body.conversationId, version: body.version });
        return answer(send, sent.filter((s) => s.eventId === send.eventId).length);
      },
      tenantHooks: async (tenantId) => {
        const hooks: Record<string, HookDefinition> = {};
        for (const e of await store.read(tenantId, `tenantconfig-${tenantId}`)) {
          const { hook } = e.data as { hook: HookDefinition };
          if (e.type === 'HookConfigured') hooks[hook.name] = hook;
        }
        return { hooks };
      },
      logger: createLogger('tools', { level: 'silent' }),
    },
    { schedule: { backoffMs: [20, 20] }, pollMs: 10, leaseMs: 1_000 },
  );
  await delivery.start();
  deliveries.push(delivery);
};

/** A conversation of `agentId` with `turns` completed turns (TurnStarted + TurnCompleted each). */
const converse = async (conversationId: string, turns: number, agentId = 'chat') => {
  const stream = `conversation-${conversationId}`;
  const events: EventData[] = [{ type: 'ConversationCreated', data: { agentId, at: 'now' } }];
  for (let t = 1; t <= turns; t++) {
    events.push({ type: 'TurnStarted', data: { turnId: `t${t}` } });
    events.push({ type: 'TurnCompleted', data: { turnId: `t${t}`, finishReason: 'stop' } });
  }
  await store.append(TENANT, stream, events);
};

const versionsTo = (conversationId: string, hook?: string) =>
  sent
    .filter((s) => s.conversationId === conversationId && (hook === undefined || s.url.endsWith(`/${hook}`)))
    .map((s) => s.version);

beforeEach(() => {
  store = new InMemoryEventStore();
  bus = new InMemoryEventBus({ logger: { warn: () => undefined, error: () => undefined } });
  relay = new OutboxRelay({
    store,
    bus,
    checkpoints: new InMemoryCheckpointStore(),
    leases: new InMemoryLeaseStore(),
    idleMs: 5,
  });
  relay.start();
  lanes = new InMemoryHookLaneStore();
  deliveries = [];
  sent = [];
  answer = () => ({ ok: true });
});

afterEach(async () => {
  await Promise.all(deliveries.map((d) => d.stop()));
  await relay.stop();
  await bus.close();
});

describe('hook deliveries', () => {
  it('sends a conversation’s events in order, a failing one holding the later ones back, other conversations not', async () => {
    await configure(hookDef('audit', ['turn.completed']));
    await start();
    // c1's first turn.completed (v3) fails twice before it goes through.
    answer = (send, nth) => {
      const version = (JSON.parse(send.body) as { version: number }).version;
      return send.body.includes('"conversationId":"c1"') && version === 3 && nth <= 2
        ? { ok: false, error: 'the hook answered 503' }
        : { ok: true };
    };
    await converse('c1', 3);
    await converse('c2', 2);
    await eventually(() => expect(versionsTo('c1')).toEqual([3, 3, 3, 5, 7]), { timeoutMs: 5_000 });
    expect(versionsTo('c2')).toEqual([3, 5]);
    // Every copy of one event carries the same Idempotency-Key: its event id.
    const keys = sent.filter((s) => s.conversationId === 'c1' && s.version === 3).map((s) => s.eventId);
    expect(new Set(keys).size).toBe(1);
  });

  it('dead-letters an event after its last attempt and goes on with the next', async () => {
    await configure(hookDef('broken', ['turn.completed']));
    await start();
    answer = (send) =>
      send.body.includes('"version":3') ? { ok: false, error: 'the hook answered 500' } : { ok: true };
    await converse('c3', 2);
    await eventually(() => expect(versionsTo('c3')).toEqual([3, 3, 3, 5]), { timeoutMs: 5_000 });
    const letters = await eventually(async () => {
      const found = await bus.deadLetters.list({ consumer: 'hooks', tenantId: TENANT });
      expect(found).toHaveLength(1);
      return found;
    });
    expect(letters[0]).toMatchObject({ deliveryCount: 3, error: 'the hook answered 500' });
    expect(letters[0]!.event).toMatchObject({
      type: 'TurnCompleted',
      version: 3,
      metadata: { hook: 'broken' },
    });

    // The operator replays it once the hook is back: sent once more under the same key, marked replayed.
    answer = () => ({ ok: true });
    await bus.replayDeadLetter(letters[0]!.id);
    await eventually(() => expect(versionsTo('c3')).toEqual([3, 3, 3, 5, 3]), { timeoutMs: 5_000 });
    expect(new Set(sent.filter((s) => s.version === 3).map((s) => s.eventId)).size).toBe(1);
    await eventually(async () =>
      expect(await bus.deadLetters.list({ consumer: 'hooks', tenantId: TENANT })).toEqual([]),
    );
  });

  it('appends a hook’s data once per event, even when the event is sent again', async () => {
    await configure(hookDef('titles', ['turn.completed']));
    // The first advance after the send is lost (a crash between): the event goes again.
    const advance = lanes.advance.bind(lanes);
    let lost = false;
    lanes.advance = async (...args) => {
      if (!lost) {
        lost = true;
        throw new Error('crashed before the cursor moved');
      }
      return advance(...args);
    };
    await start();
    answer = () => ({ ok: true, body: { data: { title: 'Refund questions' } } });
    await converse('c4', 1);
    await eventually(() => expect(versionsTo('c4')).toEqual([3, 3]), { timeoutMs: 5_000 });
    const events = await eventually(async () => {
      const all = await store.read(TENANT, 'conversation-c4');
      expect(all.at(-1)?.type).toBe('HookDataReceived');
      return all;
    });
    const data = events.filter((e) => e.type === 'HookDataReceived');
    expect(data).toHaveLength(1);
    expect(data[0]!.data).toMatchObject({ hook: 'titles', data: { title: 'Refund questions' } });
  });

  it('sends a hook that names an agent only that agent’s conversations', async () => {
    await configure(
      hookDef('chat-only', ['turn.completed'], { agentId: 'chat' }),
      hookDef('tools', ['tool.result']),
    );
    await start();
    await converse('c5', 1, 'chat');
    await converse('c6', 1, 'support');
    await eventually(() => expect(versionsTo('c5')).toEqual([3]), { timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 100));
    expect(versionsTo('c6')).toEqual([]);
  });
});
