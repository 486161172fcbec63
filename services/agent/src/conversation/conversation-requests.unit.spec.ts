// The agent's conversation use cases with an Idempotency-Key, on the in-memory store: a retry (on
// this instance or a fresh one, i.e. another process with no cache) gets the first outcome and
// writes nothing, also when retries race the first request; the budget keeps no reservation for
// a retry.
import { ConflictError, InMemoryEventBus, InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { acceptedRequestOf } from '../grpc/accepted-request.js';
import { BudgetDirectory } from '../budget/budget-directory.js';
import { TurnBudgets } from '../budget/turn-budgets.js';
import type { CallContext } from '../call-context.js';
import { ConversationService } from './conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';

const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const month = new Date().toISOString().slice(0, 7);

const setup = async () => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
  await store.append('keel', 'tenants-registry', [
    { type: 'BudgetSet', data: { tenantId: 'acme', monthlyUsd: 100, at: new Date().toISOString() } },
  ]);
  const directory = new BudgetDirectory(store, { maxAgeMs: 0 });
  const config = new TenantConfigService(store);
  await config.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: [],
      maxSteps: 2,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  /** One agent process (its own caches); two of them share only the store and the bus. */
  const instance = () =>
    new ConversationService(store, bus, config, {
      budgets: new TurnBudgets(store, directory, { reserveUsd: 0.05 }),
      snapshotEvery: 20,
    });
  const read = async (stream: string) => store.read('acme', stream);
  return { store, instance, read };
};

const sendKey = (key: string, content: string) =>
  acceptedRequestOf('SubmitMessage', key, { content, ifBusy: 'reject' });

describe('conversation requests with an Idempotency-Key', () => {
  it('a message retried on another instance gets the first turn and version; nothing more is written', async () => {
    const { instance, read } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    const first = await a.send(ctx, id, { content: 'hello' }, sendKey('k1', 'hello'));
    const retried = await b.send(ctx, id, { content: 'hello' }, sendKey('k1', 'hello'));
    expect(retried).toEqual(first);
    expect(first.version).toBe(1);
    expect((await read(`conversation-${id}`)).map((e) => e.type)).toEqual([
      'ConversationCreated',
      'UserMessageAdded',
      'TurnStarted',
    ]);
    // One reservation, for the first turn only.
    expect((await read(`budget-${month}`)).map((e) => e.type)).toEqual(['BudgetReserved']);
    await expect(b.send(ctx, id, { content: 'other' }, sendKey('k1', 'other'))).rejects.toThrow(
      /Idempotency-Key/,
    );
  });

  it('retries racing the first request on two instances: one turn, every answer names it, no reservation kept', async () => {
    const { instance, read } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    const answers = await Promise.all(
      [a, b, a, b].map((service) => service.send(ctx, id, { content: 'hello' }, sendKey('race', 'hello'))),
    );
    expect(new Set(answers.map((x) => x.turnId)).size).toBe(1);
    expect(new Set(answers.map((x) => x.version)).size).toBe(1);
    const types = (await read(`conversation-${id}`)).map((e) => e.type);
    expect(types.filter((t) => t === 'UserMessageAdded')).toHaveLength(1);
    const budget = (await read(`budget-${month}`)).map((e) => [
      e.type,
      (e.data as { turnId: string }).turnId,
    ]);
    const kept = budget.filter(([t]) => t === 'BudgetReserved').map(([, turnId]) => turnId);
    const released = budget.filter(([t]) => t === 'BudgetReleased').map(([, turnId]) => turnId);
    expect(kept.filter((turnId) => !released.includes(turnId))).toEqual([answers[0]!.turnId]);
    // All four decided before any append (so all four reserved); the three that then found the
    // first one's turn in the log gave their reservations back.
    expect([kept.length, released.length]).toEqual([4, 3]);
  });

  it('a fresh instance loading from a snapshot answers as one folding the whole log; deleting snapshots changes nothing', async () => {
    const { store, instance, read } = await setup();
    const a = instance();
    const { id } = await a.create(ctx, { agentId: 'support' });
    const send = (service: ConversationService, i: number) =>
      service.send(
        ctx,
        id,
        { content: `m${i}`, ifBusy: 'enqueue' },
        acceptedRequestOf('SubmitMessage', `k${i}`, { content: `m${i}`, ifBusy: 'enqueue' }),
      );
    const firsts = [];
    for (let i = 0; i < 15; i++) firsts.push(await send(a, i));
    const snapshot = await store.snapshots.load('acme', `conversation-${id}`, 'conversation-v5');
    expect(snapshot?.version).toBeGreaterThan(1);
    const written = (await read(`conversation-${id}`)).length;
    for (const service of [instance(), instance()]) {
      for (let i = 0; i < 15; i++) expect(await send(service, i)).toEqual(firsts[i]);
      await store.snapshots.delete('acme');
    }
    expect(await read(`conversation-${id}`)).toHaveLength(written);
  });

  it('a create retried on another instance answers the same conversation; another body: a conflict', async () => {
    const { instance, read } = await setup();
    const [a, b] = [instance(), instance()];
    const key = (title: string) =>
      acceptedRequestOf('CreateConversation', 'c1', { agentId: 'support', title });
    const first = await a.create(ctx, { agentId: 'support', title: 'T' }, key('T'));
    const again = await Promise.all([
      b.create(ctx, { agentId: 'support', title: 'T' }, key('T')),
      a.create(ctx, { agentId: 'support', title: 'T' }, key('T')),
    ]);
    expect(again).toEqual([first, first]);
    expect(await read(`conversation-${first.id}`)).toHaveLength(1);
    await expect(b.create(ctx, { agentId: 'support', title: 'U' }, key('U'))).rejects.toThrow(
      /Idempotency-Key/,
    );
  });

  it('a cancel retried after the turn ended answers the turn it cancelled; without its key: 409', async () => {
    const { instance, read } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    const { turnId } = await a.send(ctx, id, { content: 'hello' });
    const cancelKey = acceptedRequestOf('CancelTurn', 'x1', {});
    expect(await a.cancel(ctx, id, cancelKey)).toEqual({ turnId });
    expect(await b.cancel(ctx, id, cancelKey)).toEqual({ turnId });
    await expect(b.cancel(ctx, id)).rejects.toBeInstanceOf(ConflictError);
    expect((await read(`conversation-${id}`)).filter((e) => e.type === 'TurnCancelled')).toHaveLength(1);
  });
});
