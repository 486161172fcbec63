// The agent's hot-path commands on a conversation this process remembers: a message, an approval,
// a client's answer and a tool's result append with no read of the conversation; when another
// process (another instance with its own memory, sharing only the store) moved the conversation
// meanwhile, every answer is still the one the log gives: nothing answered from a stale memory.
// And a creation makes the conversation's data key, so the first message does not wait for it.
import type { ReadStreamOptions } from '@keel/core';
import { InMemoryEventBus, InMemoryEventStore, NotFoundError, ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { acceptedRequestOf } from '../grpc/accepted-request.js';
import { BudgetDirectory } from '../budget/budget-directory.js';
import { TurnBudgets } from '../budget/turn-budgets.js';
import type { CallContext } from '../call-context.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { ConversationService } from './conversation.service.js';
import type { ConversationCommand } from './conversation.commands.js';

const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const month = new Date().toISOString().slice(0, 7);
const usage = {
  model: 'gpt-test',
  promptTokens: 1,
  completionTokens: 1,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  costUsd: 0,
};

const bus = () => new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });

/** A store with the tenant's `support` agent. */
const bare = async () => {
  const store = new InMemoryEventStore();
  const config = new TenantConfigService(store);
  await config.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: [],
      maxSteps: 3,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  return { store, config };
};

const setup = async () => {
  const { store, config } = await bare();
  const conversationReads: number[] = [];
  const read = store.read.bind(store);
  store.read = async (tenantId: string, stream: string, options?: ReadStreamOptions) => {
    if (stream.startsWith('conversation-')) conversationReads.push(options?.fromVersion ?? 1);
    return read(tenantId, stream, options);
  };
  await store.append('keel', 'tenants-registry', [
    { type: 'BudgetSet', data: { tenantId: 'acme', monthlyUsd: 100, at: new Date().toISOString() } },
  ]);
  const directory = new BudgetDirectory(store, { maxAgeMs: 0 });
  const shared = bus();
  /** One agent process (its own memory); two of them share only the store and the bus. */
  const instance = () =>
    new ConversationService(store, shared, config, {
      budgets: new TurnBudgets(store, directory, { reserveUsd: 0.05 }),
    });
  const log = async (stream: string) => (await read('acme', stream)).map((e) => e.type);
  return { instance, log, conversationReads };
};

/** The model's output of step 1 asking for `refund` (call `r`), which a person approves (`ap-1`). */
const approvalCall = (turnId: string): ConversationCommand => ({
  type: 'RecordModelOutput',
  turnId,
  step: 1,
  messageId: 'a1',
  text: '',
  toolCalls: [{ toolCallId: 'r', name: 'refund', args: {}, verdict: { kind: 'allow', approval: 'always' } }],
  usage,
  approvalIds: { r: 'ap-1' },
  at: new Date().toISOString(),
});

/** The model's output of step 1 asking the client for `read_page` (call `k`). */
const clientCall = (turnId: string): ConversationCommand => ({
  type: 'RecordModelOutput',
  turnId,
  step: 1,
  messageId: 'a1',
  text: '',
  toolCalls: [
    {
      toolCallId: 'k',
      name: 'read_page',
      args: {},
      verdict: { kind: 'allow', approval: 'never', client: { timeoutMs: 60_000 } },
    },
  ],
  usage,
  approvalIds: {},
  at: new Date().toISOString(),
});

const sendKey = (key: string, content: string) =>
  acceptedRequestOf('SubmitMessage', key, { content, ifBusy: 'reject' });

describe('commands on a conversation this process remembers', () => {
  it('a message appends with no read of the conversation, and answers the version before it', async () => {
    const { instance, log, conversationReads } = await setup();
    const a = instance();
    const { id } = await a.create(ctx, { agentId: 'support' });
    conversationReads.length = 0;
    const sent = await a.send(ctx, id, { content: 'hello' });
    expect(conversationReads).toEqual([]);
    expect(sent.version).toBe(1);
    expect(await log(`conversation-${id}`)).toEqual([
      'ConversationCreated',
      'UserMessageAdded',
      'TurnStarted',
    ]);
  });

  it('a turn that ended on another instance: `ifBusy: reject` starts the next turn, not a 409', async () => {
    const { instance, log } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    await a.send(ctx, id, { content: 'first' });
    await b.cancel(ctx, id);
    const second = await a.send(ctx, id, { content: 'second' });
    expect(second.version).toBe(4);
    expect(await log(`conversation-${id}`)).toEqual([
      'ConversationCreated',
      'UserMessageAdded',
      'TurnStarted',
      'TurnCancelled',
      'UserMessageAdded',
      'TurnStarted',
    ]);
    // The refusal decided on the stale memory reserved nothing: one reservation per turn.
    expect((await log(`budget-${month}`)).filter((t) => t === 'BudgetReserved')).toHaveLength(2);
  });

  it('a turn that started on another instance: the message is refused (409), nothing written, its reservation given back', async () => {
    const { instance, log } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    await b.send(ctx, id, { content: 'first' });
    await expect(a.send(ctx, id, { content: 'second' })).rejects.toThrow(/already running/);
    expect(await log(`conversation-${id}`)).toHaveLength(3);
    const budget = await log(`budget-${month}`);
    expect(budget.filter((t) => t === 'BudgetReserved').length).toBe(
      budget.filter((t) => t === 'BudgetReleased').length + 1,
    );
  });

  it('a conversation this process saw missing but another created since: the message is accepted, not a 404', async () => {
    const { instance } = await setup();
    const [a, b] = [instance(), instance()];
    const id = '0199a000-0000-7000-8000-000000000001';
    await expect(a.get('acme', id)).rejects.toBeInstanceOf(NotFoundError);
    await b.create(ctx, { agentId: 'support', child: { conversationId: id, parent: parentLink } });
    expect((await a.send(ctx, id, { content: 'hello' })).version).toBe(1);
    await expect(a.send(ctx, 'never-created', { content: 'hello' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a retry whose first request another instance accepted after this one remembered the conversation: the first turn; another body: 409', async () => {
    const { instance, log } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    await b.get('acme', id);
    const first = await a.send(ctx, id, { content: 'hello' }, sendKey('k1', 'hello'));
    expect(await b.send(ctx, id, { content: 'hello' }, sendKey('k1', 'hello'))).toEqual(first);
    await expect(b.send(ctx, id, { content: 'other' }, sendKey('k1', 'other'))).rejects.toThrow(
      /Idempotency-Key/,
    );
    expect(await log(`conversation-${id}`)).toHaveLength(3);
  });

  it("a client's answer to a call requested on another instance is checked against the tool's output schema", async () => {
    const { instance, log } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    const { turnId } = await a.send(ctx, id, { content: 'read it' });
    await b.run(ctx, id, clientCall(turnId));
    const refuse = () => Promise.reject(new ValidationError('result.title is required'));
    await expect(
      a.submitToolResult(ctx, id, { toolCallId: 'k', ok: true, result: {} }, refuse),
    ).rejects.toBeInstanceOf(ValidationError);
    expect((await log(`conversation-${id}`)).at(-1)).toBe('ToolCallRequested');
    const checked: string[] = [];
    const accept = (tool: string) => {
      checked.push(tool);
      return Promise.resolve();
    };
    await a.submitToolResult(ctx, id, { toolCallId: 'k', ok: true, result: { title: 'Home' } }, accept);
    expect(checked).toEqual(['read_page']);
    expect(await log(`conversation-${id}`)).toContain('ToolCallCompleted');
  });

  it('an approval appends with no read; one decided meanwhile on another instance is a 409 from the log, a retry with its key the first answer', async () => {
    const { instance, log, conversationReads } = await setup();
    const [a, b] = [instance(), instance()];
    const { id } = await a.create(ctx, { agentId: 'support' });
    const { turnId } = await a.send(ctx, id, { content: 'refund it' });
    await a.run(ctx, id, approvalCall(turnId));
    await b.get('acme', id);
    conversationReads.length = 0;
    const key = acceptedRequestOf('DecideApproval ap-1', 'd1', { decision: 'approve', reason: '' });
    await a.decideApproval(ctx, id, 'ap-1', { decision: 'approve' }, key);
    expect(conversationReads).toEqual([]);
    expect(await b.decideApproval(ctx, id, 'ap-1', { decision: 'approve' }, key)).toEqual({
      approvalId: 'ap-1',
      decision: 'approve',
    });
    await expect(b.decideApproval(ctx, id, 'ap-1', { decision: 'deny' })).rejects.toThrow(/already decided/);
    expect((await log(`conversation-${id}`)).filter((t) => t === 'ApprovalDecided')).toHaveLength(1);
  });

  it("a tool's result on a call this process recorded appends with no read", async () => {
    const { instance, log, conversationReads } = await setup();
    const a = instance();
    const { id } = await a.create(ctx, { agentId: 'support' });
    const { turnId } = await a.send(ctx, id, { content: 'read it' });
    await a.run(ctx, id, clientCall(turnId));
    conversationReads.length = 0;
    await a.recordToolResult(ctx, id, { toolCallId: 'k', ok: true, result: { title: 'Home' } });
    expect(conversationReads).toEqual([]);
    expect(await log(`conversation-${id}`)).toContain('ToolCallCompleted');
  });
});

describe("a conversation's creation", () => {
  it('reads nothing of the conversation it creates under an id it made up (with a key it won, too)', async () => {
    const { instance, log, conversationReads } = await setup();
    const a = instance();
    conversationReads.length = 0;
    const { id } = await a.create(ctx, { agentId: 'support' });
    const keyed = await a.create(
      ctx,
      { agentId: 'support' },
      acceptedRequestOf('CreateConversation', 'c1', { agentId: 'support', title: '', metadata: {} }),
    );
    expect(conversationReads).toEqual([]);
    expect(await log(`conversation-${id}`)).toEqual(['ConversationCreated']);
    expect(await log(`conversation-${keyed.id}`)).toEqual(['ConversationCreated']);
  });

  it('makes its data key, so its first message does not; a failure to make it fails nothing', async () => {
    const { store, config } = await bare();
    const made: string[] = [];
    const service = new ConversationService(store, bus(), config, {
      makeDataKey: (tenantId, id) => {
        made.push(`${tenantId}/${id}`);
        return Promise.reject(new Error('data_keys is down'));
      },
    });
    const { id } = await service.create(ctx, { agentId: 'support' });
    expect(made).toEqual([`acme/${id}`]);
    expect((await service.send(ctx, id, { content: 'hello' })).version).toBe(1);
    expect(made).toHaveLength(1);
  });
});

const parentLink = { conversationId: 'parent-1', toolCallId: 'sub-1', chain: ['support'], depthLimit: 3 };
