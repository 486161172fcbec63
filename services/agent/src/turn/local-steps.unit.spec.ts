import type { Consumer, EventBus } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
} from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import type { ModelStepInput, ModelStepOutput } from '../model/model-step.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { StepClaims } from './step-claims.js';
import { TurnWorker } from './turn-worker.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A model that answers "done" once `free` resolves, telling `onCall` of each call as it is asked. */
const heldModel = (
  free: Promise<unknown> = Promise.resolve(),
  onCall: () => Promise<void> = async () => {},
) => {
  const calls: ModelStepInput[] = [];
  const step = async (input: ModelStepInput): Promise<ModelStepOutput> => {
    await input.ready;
    calls.push(input);
    await onCall();
    await free;
    input.onDelta('done');
    return {
      text: 'done',
      toolCalls: [],
      usage: { promptTokens: 1, completionTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
      model: 'gpt-test',
      contextTokens: 1,
    };
  };
  return { step, calls };
};

/** A deferred promise. */
const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

/** One store and bus; instances (a conversation service and a turn worker each) made on them. */
const platform = async () => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: silent });
  const relay = new OutboxRelay({
    store,
    bus,
    checkpoints: new InMemoryCheckpointStore(),
    leases: new InMemoryLeaseStore(),
    idleMs: 5,
  });
  const admin = new TenantConfigService(store);
  await admin.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: [],
      maxSteps: 4,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  const workers: TurnWorker[] = [];
  const instance = async (
    model: ReturnType<typeof heldModel>,
    options: { bus?: EventBus; claimTtlMs?: number } = {},
  ) => {
    const config = new TenantConfigService(store);
    const conversations = new ConversationService(store, bus, config);
    const catalog = { builtins: [], validate: () => [] };
    const worker = new TurnWorker({
      store,
      bus: options.bus ?? bus,
      conversations,
      config,
      modelStep: model.step,
      catalog,
      logger: silent,
      ...(options.claimTtlMs ? { claimTtlMs: options.claimTtlMs } : {}),
    });
    await worker.start();
    workers.push(worker);
    return { conversations, worker };
  };
  const stopAll = async () => {
    for (const w of workers) await w.stop();
    await relay.stop();
    await bus.close();
  };
  return { store, bus, relay, instance, stopAll };
};

const statusOf = async (conversations: ConversationService, id: string) =>
  (await conversations.get('acme', id)).status;

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('local start of a step', () => {
  it('runs the step of a message this process commits with no delivery, never before the commit; the delivery waits for it', async () => {
    const p = await platform();
    stop = p.stopAll;
    const free = deferred();
    // What the log holds when the model is asked: the turn's start is committed by then.
    const logAtCall: string[][] = [];
    let id = '';
    const model = heldModel(free.promise, async () => {
      logAtCall.push((await p.store.read('acme', `conversation-${id}`)).map((e) => e.type));
    });
    const a = await p.instance(model);
    ({ id } = await a.conversations.create(ctx, { agentId: 'support' }));
    await a.conversations.send(ctx, id, { content: 'hi' });
    // The relay is not running: nothing is on the bus, and the model is asked all the same.
    await eventuallyTrue(async () => model.calls.length === 1, 2_000);
    await eventuallyTrue(async () => logAtCall.length === 1, 2_000);
    expect(logAtCall[0]).toContain('TurnStarted');
    expect(await p.bus.pending('agent-turns')).toBe(0);
    // Published now: the trigger's delivery joins the running step, unacknowledged while it runs.
    p.relay.start();
    await eventuallyTrue(async () => (await p.bus.pending('agent-turns')) === 1, 2_000);
    await sleep(50);
    expect(await p.bus.pending('agent-turns')).toBe(1);
    free.resolve();
    await eventuallyTrue(async () => (await statusOf(a.conversations, id)) === 'idle', 2_000);
    await eventuallyTrue(async () => (await p.bus.pending('agent-turns')) === 0, 2_000);
    expect(model.calls).toHaveLength(1);
    const view = await a.conversations.get('acme', id);
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'hi'],
      ['assistant', 'done'],
    ]);
  });

  it('another instance holds the deliveries of steps a starter claimed: one model call per step', async () => {
    const p = await platform();
    stop = p.stopAll;
    p.relay.start();
    const free = deferred();
    const modelA = heldModel(free.promise);
    const modelB = heldModel();
    const a = await p.instance(modelA);
    await p.instance(modelB);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { id } = await a.conversations.create(ctx, { agentId: 'support' });
      await a.conversations.send(ctx, id, { content: `hi ${i}` });
      ids.push(id);
    }
    // Every trigger handed out (to A or B) while A's steps run.
    await eventuallyTrue(async () => modelA.calls.length === 6, 2_000);
    await sleep(100);
    free.resolve();
    for (const id of ids) {
      await eventuallyTrue(async () => (await statusOf(a.conversations, id)) === 'idle', 3_000);
    }
    await eventuallyTrue(async () => (await p.bus.pending('agent-turns')) === 0, 3_000);
    expect(modelA.calls).toHaveLength(6);
    expect(modelB.calls).toHaveLength(0);
  });

  it('a claim whose starter died lapses: the held delivery runs the step on another instance', async () => {
    const p = await platform();
    stop = p.stopAll;
    p.relay.start();
    // The starter: its deliveries go elsewhere, and once "killed" it says nothing more.
    let dead = false;
    const noConsumer: Consumer = { name: 'none', stop: async () => undefined };
    const starterBus: EventBus = Object.assign(Object.create(p.bus) as EventBus, {
      consume: async () => noConsumer,
      ephemeral: {
        publish: (topic, data) => (dead ? undefined : p.bus.ephemeral.publish(topic, data)),
        subscribe: (scope, handler) => p.bus.ephemeral.subscribe(scope, handler),
      } satisfies EventBus['ephemeral'],
    });
    const stuck = deferred();
    const modelA = heldModel(stuck.promise);
    const modelB = heldModel();
    const a = await p.instance(modelA, { bus: starterBus, claimTtlMs: 150 });
    await p.instance(modelB);
    const { id } = await a.conversations.create(ctx, { agentId: 'support' });
    await a.conversations.send(ctx, id, { content: 'hi' });
    await eventuallyTrue(async () => modelA.calls.length === 1, 2_000);
    // B has the trigger and holds it while the claim is renewed.
    await eventuallyTrue(async () => (await p.bus.pending('agent-turns')) === 1, 2_000);
    await sleep(400);
    expect(modelB.calls).toHaveLength(0);
    dead = true;
    await eventuallyTrue(async () => modelB.calls.length === 1, 2_000);
    await eventuallyTrue(async () => (await statusOf(a.conversations, id)) === 'idle', 2_000);
    // The "dead" starter's late output is refused: the step is recorded once.
    stuck.resolve();
    await sleep(50);
    const view = await a.conversations.get('acme', id);
    expect(view.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('a commit refused on a stale state asks the model nothing for it; the step runs once on the delivery', async () => {
    const p = await platform();
    stop = p.stopAll;
    p.relay.start();
    const model = heldModel();
    const a = await p.instance(model);
    const other = new ConversationService(p.store, p.bus, new TenantConfigService(p.store));
    const { id } = await a.conversations.create(ctx, { agentId: 'support' });
    // Written elsewhere: what A remembers of the conversation is behind, its first append refused.
    await other.update(ctx, id, { title: 'renamed' });
    await a.conversations.send(ctx, id, { content: 'hi' });
    await eventuallyTrue(async () => (await statusOf(a.conversations, id)) === 'idle', 2_000);
    await sleep(50);
    expect(model.calls).toHaveLength(1);
  });
});

describe('step claims', () => {
  const bus = () => new InMemoryEventBus({ logger: silent });

  it('holds a waiter until the claim is released, then lapses one that is not renewed', async () => {
    const shared = bus();
    const starter = new StepClaims(shared, 100);
    const other = new StepClaims(shared, 100);
    starter.start();
    other.start();
    try {
      const release = starter.claim('acme', 'c1', 't1', 1);
      expect(other.claimedByOther('acme', 'c1', 't1', 1)).toBe(true);
      // Its own claim holds nothing in the starter.
      expect(await starter.whileClaimed('acme', 'c1', 't1')).toBe(false);
      // Another turn's trigger is not held.
      expect(await other.whileClaimed('acme', 'c1', 't2')).toBe(false);
      const started = Date.now();
      const waited = other.whileClaimed('acme', 'c1', 't1');
      await sleep(250);
      // Renewed every ttl/3: still held past the ttl.
      release();
      expect(await waited).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(240);
      expect(other.claimedByOther('acme', 'c1', 't1', 1)).toBe(false);
      // A late delivery of the released step's trigger is told so at once (it must read the log).
      expect(await other.whileClaimed('acme', 'c1', 't1')).toBe(true);
      // A claim never renewed (its holder died) lapses after its ttl.
      shared.ephemeral.publish(
        { kind: 'claims', tenantId: 'acme', conversationId: 'c2' },
        { turnId: 't9', step: 2, holder: 'dead', ttlMs: 100 },
      );
      const lapseStarted = Date.now();
      expect(await other.whileClaimed('acme', 'c2', 't9')).toBe(true);
      expect(Date.now() - lapseStarted).toBeGreaterThanOrEqual(90);
    } finally {
      starter.stop();
      other.stop();
      await shared.close();
    }
  });
});
