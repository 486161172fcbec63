import {
  BudgetExceededError,
  ConflictError,
  InMemoryEventBus,
  InMemoryEventStore,
  ValidationError,
} from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { BudgetDirectory } from './budget-directory.js';
import { TurnBudgets } from './turn-budgets.js';

const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const month = new Date().toISOString().slice(0, 7);

/** The agent's send path with budgets, on the in-memory store; the tenant's budget fits `turns` turns of 0.05. */
const setup = async (turns: number) => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
  await store.append('keel', 'tenants-registry', [
    { type: 'BudgetSet', data: { tenantId: 'acme', monthlyUsd: turns * 0.05, at: new Date().toISOString() } },
  ]);
  const budgets = new TurnBudgets(store, new BudgetDirectory(store, { maxAgeMs: 0 }), { reserveUsd: 0.05 });
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
  const conversations = new ConversationService(store, bus, config, { budgets });
  const { id } = await conversations.create(ctx, { agentId: 'support' });
  const budgetEvents = async () =>
    (await store.read('acme', `budget-${month}`)).map((e) => [e.type, (e.data as { turnId: string }).turnId]);
  const conversationTypes = async () => (await store.read('acme', `conversation-${id}`)).map((e) => e.type);
  return { conversations, id, budgetEvents, conversationTypes };
};

describe('budget admission on the agent send path (HTTP and gRPC both submit through it)', () => {
  it('reserves the started turn before its message is written', async () => {
    const { conversations, id, budgetEvents, conversationTypes } = await setup(2);
    const { turnId } = await conversations.send(ctx, id, { content: 'hello' });
    expect(await budgetEvents()).toEqual([['BudgetReserved', turnId]]);
    expect(await conversationTypes()).toEqual(['ConversationCreated', 'UserMessageAdded', 'TurnStarted']);
  });

  it('refuses over budget with budget_exceeded and writes nothing to the conversation', async () => {
    const { conversations, id, conversationTypes } = await setup(0);
    await expect(conversations.send(ctx, id, { content: 'hello' })).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    expect(await conversationTypes()).toEqual(['ConversationCreated']);
  });

  it('reserves nothing for a busy conversation (ifBusy reject) or bad input', async () => {
    const { conversations, id, budgetEvents } = await setup(5);
    const first = await conversations.send(ctx, id, { content: 'hello' });
    await expect(conversations.send(ctx, id, { content: 'again' })).rejects.toBeInstanceOf(ConflictError);
    await expect(conversations.send(ctx, id, { content: '   ', ifBusy: 'enqueue' })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(await budgetEvents()).toEqual([['BudgetReserved', first.turnId]]);
  });

  it('reserves the queued turn of ifBusy enqueue, and counts it against the budget', async () => {
    const { conversations, id, budgetEvents, conversationTypes } = await setup(2);
    const first = await conversations.send(ctx, id, { content: 'hello' });
    const queued = await conversations.send(ctx, id, { content: 'next', ifBusy: 'enqueue' });
    expect(await budgetEvents()).toEqual([
      ['BudgetReserved', first.turnId],
      ['BudgetReserved', queued.turnId],
    ]);
    await expect(conversations.send(ctx, id, { content: 'third', ifBusy: 'enqueue' })).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    expect((await conversationTypes()).filter((t) => t === 'UserMessageAdded')).toHaveLength(2);
  });

  it('releases the reservation when the submit loses a race to another message', async () => {
    const { conversations, id, budgetEvents } = await setup(5);
    const outcomes = await Promise.allSettled(
      ['a', 'b', 'c'].map((content) => conversations.send(ctx, id, { content })),
    );
    const started = outcomes.filter((o) => o.status === 'fulfilled');
    expect(started).toHaveLength(1);
    const events = await budgetEvents();
    const held = events.filter(([type]) => type === 'BudgetReserved').map(([, turnId]) => turnId);
    const released = events.filter(([type]) => type === 'BudgetReleased').map(([, turnId]) => turnId);
    // All three passed the busy check before any message was written, so all three reserved;
    // the two that lost the conversation's append gave theirs back.
    expect(held).toHaveLength(3);
    expect(released).toHaveLength(2);
    expect(held.filter((t) => !released.includes(t))).toEqual([
      (started[0] as PromiseFulfilledResult<{ turnId: string }>).value.turnId,
    ]);
  });
});
