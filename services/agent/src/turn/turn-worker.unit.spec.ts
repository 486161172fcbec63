import type { EphemeralMessage, RecordedEvent } from '@keel/core';
import {
  InMemoryCheckpointStore,
  InMemoryEventBus,
  InMemoryEventStore,
  InMemoryLeaseStore,
  OutboxRelay,
  streamName,
} from '@keel/core';
import { eventuallyTrue } from '@keel/core/testing';
import type { ToolDefinition } from '@keel/events';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelStepInput, ModelStepOutput } from '../model/model-step.js';
import type { UsagePricing, UsageToPrice } from '../pricing/usage-pricing.js';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { TurnWorker } from './turn-worker.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'req-1',
};
const tool = (name: string, approval: 'never' | 'always'): ToolDefinition => ({
  name,
  description: `${name} tool`,
  inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  kind: 'webhook',
  url: 'https://tools.example.com/x',
  approval,
  roles: [],
  phases: [],
  timeoutMs: 5_000,
});

type Script = Array<Partial<ModelStepOutput> | { hang: true } | { fail: string }>;

/** A model that answers from a script chosen by the conversation's first user message. */
const scriptedModel = (scripts: Record<string, Script>) => {
  const calls: ModelStepInput[] = [];
  const step = async (input: ModelStepInput): Promise<ModelStepOutput> => {
    calls.push(input);
    const first = input.messages.find((m) => m.role === 'user')!.content;
    // The step of this call in its conversation: one more than the model answers it has already given.
    const done = input.messages.filter((m) => m.role === 'assistant').length + 1;
    const next = scripts[first]?.[done - 1];
    if (!next) throw new Error(`no scripted step ${done} for "${first}"`);
    if ('hang' in next) {
      return new Promise((_, reject) =>
        input.signal.addEventListener('abort', () =>
          reject(Object.assign(new Error('aborted'), { name: 'AbortError' })),
        ),
      );
    }
    if ('fail' in next) throw new Error(next.fail);
    for (const word of (next.text ?? '').split(' ')) if (word) input.onDelta(`${word} `);
    return {
      text: next.text ?? '',
      toolCalls: next.toolCalls ?? [],
      usage: { promptTokens: 10, completionTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
      model: 'gpt-test',
      contextTokens: 10,
    };
  };
  return { step, calls };
};

const setup = async (
  scripts: Record<string, Script>,
  options: { workers?: number; pricing?: UsagePricing } = {},
) => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: silent });
  const relay = new OutboxRelay({
    store,
    bus,
    checkpoints: new InMemoryCheckpointStore(),
    leases: new InMemoryLeaseStore(),
    idleMs: 5,
  });
  const config = new TenantConfigService(store);
  const conversations = new ConversationService(store, bus, config);
  const model = scriptedModel(scripts);
  const catalog = {
    builtins: [],
    validate: (_schema: Record<string, unknown>, args: unknown) =>
      typeof (args as { id?: unknown }).id === 'string' ? [] : [{ path: '/id', message: 'must be string' }],
  };
  const workers = Array.from(
    { length: options.workers ?? 1 },
    () =>
      new TurnWorker({
        store,
        bus,
        conversations,
        config,
        modelStep: model.step,
        catalog,
        logger: silent,
        ...(options.pricing ? { pricing: options.pricing } : {}),
      }),
  );
  // A stand-in for the tools service: executes requested (or approved) calls and reports the outcome.
  const executed: string[] = [];
  const requested = new Map<string, RecordedEvent>();
  await bus.consume(
    { name: 'fake-tools', filter: { category: 'conversation' }, maxInFlight: 8 },
    async ({ event }) => {
      const data = event.data as {
        toolCallId: string;
        approvalRequired?: boolean;
        decision?: string;
        turnId: string;
      };
      if (event.type === 'ToolCallRequested') requested.set(data.toolCallId, event);
      const run =
        (event.type === 'ToolCallRequested' && !data.approvalRequired) ||
        (event.type === 'ApprovalDecided' && data.decision === 'approve');
      if (!run) return;
      const call = requested.get(data.toolCallId)!.data as { name: string; args: unknown; turnId: string };
      executed.push(data.toolCallId);
      // The tools service is another process: its outcome never arrives within the append that asked.
      await new Promise((resolve) => setImmediate(resolve));
      await store.append('acme', streamName('toolcall', data.toolCallId), [
        {
          type: 'ToolCallExecuted',
          data: {
            toolCallId: data.toolCallId,
            conversationId: event.streamName.slice('conversation-'.length),
            turnId: call.turnId,
            name: call.name,
            ok: true,
            result: { found: call.args },
            attempts: 1,
            durationMs: 1,
            at: new Date().toISOString(),
          },
          metadata: { correlationId: event.metadata.correlationId },
        },
      ]);
    },
  );
  await config.apply(ctx, { type: 'PutTool', tool: tool('lookup', 'never'), at: 'now' });
  await config.apply(ctx, { type: 'PutTool', tool: tool('refund', 'always'), at: 'now' });
  await config.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: ['lookup', 'refund'],
      maxSteps: 4,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  for (const w of workers) await w.start();
  relay.start();
  const deltas: EphemeralMessage[] = [];
  bus.ephemeral.subscribe({ kind: 'deltas', tenantId: 'acme' }, (m) => deltas.push(m));
  const stop = async () => {
    for (const w of workers) await w.stop();
    await relay.stop();
    await bus.close();
  };
  return { store, bus, config, conversations, model, executed, deltas, stop };
};

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('turn worker', () => {
  it('runs a turn with a tool call to completion, streaming deltas, and the rebuilt state holds it all', async () => {
    const t = await setup({
      'where is order 7?': [
        { toolCalls: [{ toolCallId: 'call_1', name: 'lookup', args: { id: '7' } }] },
        { text: 'Order 7 ships tomorrow.' },
      ],
    });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'where is order 7?' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    const view = await t.conversations.get('acme', id);
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'where is order 7?'],
      ['assistant', ''],
      ['tool', '{"found":{"id":"7"}}'],
      ['assistant', 'Order 7 ships tomorrow.'],
    ]);
    expect(view.usage).toEqual({ promptTokens: 20, completionTokens: 10, costUsd: 0 });
    expect(t.executed).toHaveLength(1);
    expect(t.executed[0]).toMatch(/^[0-9a-f-]{36}$/); // a Keel id, not the provider's call_1
    expect(t.model.calls).toHaveLength(2);
    expect(t.model.calls[1]!.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    const texts = t.deltas
      .filter((d) => (d.data as { type: string }).type === 'delta')
      .map((d) => (d.data as { text: string }).text);
    expect(texts.join('')).toBe('Order 7 ships tomorrow. ');
    const events = await t.store.read('acme', `conversation-${id}`);
    // Each ephemeral message names the log version it follows: the deltas of step 2 the tool
    // result, the context message of the last step the turn's end.
    const versionOf = (type: string) => events.find((e) => e.type === type)!.version;
    const versions = (type: string) =>
      t.deltas
        .filter((d) => (d.data as { type: string }).type === type)
        .map((d) => (d.data as { version: number }).version);
    expect(new Set(versions('delta'))).toEqual(new Set([versionOf('ToolCallCompleted')]));
    await eventuallyTrue(async () => versions('context').length === 2, 2_000);
    expect(versions('context')[1]).toBe(versionOf('TurnCompleted'));
    expect(events.map((e) => [e.type, e.metadata.correlationId]).filter(([, c]) => c !== 'req-1')).toEqual(
      [],
    );
  });

  it('runs each step of a turn this process wrote on the state it holds: no read of the conversation before a model call', async () => {
    const t = await setup({
      'where is order 7?': [
        { toolCalls: [{ toolCallId: 'call_1', name: 'lookup', args: { id: '7' } }] },
        { text: 'Order 7 ships tomorrow.' },
      ],
    });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    // Each read of the conversation, with the model calls made by then.
    const readsAt: number[] = [];
    const read = t.store.read.bind(t.store);
    t.store.read = (tenantId, stream, options) => {
      if (stream === `conversation-${id}`) readsAt.push(t.model.calls.length);
      return read(tenantId, stream, options);
    };
    await t.conversations.send(ctx, id, { content: 'where is order 7?' });
    await eventuallyTrue(async () => t.model.calls.length === 2, 5_000);
    // TurnStarted (written by send) and ToolCallCompleted (by the tool result) were both this process's.
    expect(readsAt.filter((calls) => calls < 2)).toEqual([]);
  });

  it('records each step’s cost and the model’s window from pricing, priced at the instant of the call', async () => {
    const asked: UsageToPrice[] = [];
    const pricing: UsagePricing = {
      price: async (usage) => {
        asked.push(usage);
        return asked.length === 1
          ? { costUsd: 0.0125, windowTokens: 128_000 }
          : { costUsd: null, reason: 'pricing unavailable (UNAVAILABLE: down)', windowTokens: null };
      },
    };
    const t = await setup(
      {
        'where is order 7?': [
          { toolCalls: [{ toolCallId: 'call_1', name: 'lookup', args: { id: '7' } }] },
          { text: 'Order 7 ships tomorrow.' },
        ],
      },
      { pricing },
    );
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'where is order 7?' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    const events = await t.store.read('acme', `conversation-${id}`);
    const usage = events.filter((e) => e.type === 'UsageRecorded').map((e) => e.data);
    expect(usage).toEqual([
      expect.objectContaining({ step: 1, model: 'gpt-test', costUsd: 0.0125 }),
      expect.objectContaining({
        step: 2,
        costUsd: null,
        costReason: 'pricing unavailable (UNAVAILABLE: down)',
      }),
    ]);
    expect(usage[0]).not.toHaveProperty('costReason');
    // The price is the one in force when the call ended: the instant the output is recorded with.
    const completed = events
      .filter((e) => e.type === 'AssistantMessageCompleted')
      .map((e) => (e.data as { at: string }).at);
    expect(asked.map((u) => u.at)).toEqual(completed);
    expect(asked[0]).toMatchObject({
      model: 'gpt-test',
      promptTokens: 10,
      completionTokens: 5,
      cacheReadTokens: 0,
    });
    await eventuallyTrue(
      async () => t.deltas.filter((d) => (d.data as { type: string }).type === 'context').length === 2,
      2_000,
    );
    const windows = t.deltas
      .filter((d) => (d.data as { type: string }).type === 'context')
      .map((d) => (d.data as { windowTokens: number | null }).windowTokens);
    expect(windows).toEqual([128_000, null]);
    expect((await t.conversations.get('acme', id)).usage.costUsd).toBe(0.0125);
  });

  it('two tool results arriving in separate commits start the next step once', async () => {
    const t = await setup({
      'check 1 and 2': [
        {
          toolCalls: [
            { toolCallId: 'x', name: 'lookup', args: { id: '1' } },
            { toolCallId: 'y', name: 'lookup', args: { id: '2' } },
          ],
        },
        { text: 'Both found.' },
      ],
    });
    stop = t.stop;
    for (let round = 0; round < 5; round++) {
      const { id } = await t.conversations.create(ctx, { agentId: 'support' });
      await t.conversations.send(ctx, id, { content: 'check 1 and 2' });
      await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
      expect((await t.conversations.get('acme', id)).messages.at(-1)?.content).toBe('Both found.');
    }
    // Two model calls per conversation: the step after the two results ran once each time.
    expect(t.model.calls).toHaveLength(10);
  });

  it('waits for an approval; a denial reaches the model as a tool error and the turn goes on', async () => {
    const t = await setup({
      'refund order 9': [
        { toolCalls: [{ toolCallId: 'call_r', name: 'refund', args: { id: '9' } }] },
        { text: 'I could not refund it.' },
      ],
    });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'refund order 9' });
    await eventuallyTrue(
      async () => (await t.conversations.get('acme', id)).status === 'awaiting_approval',
      5_000,
    );
    const [approval] = (await t.conversations.get('acme', id)).pendingApprovals;
    expect(approval).toMatchObject({ tool: 'refund', args: { id: '9' } });
    await t.conversations.decideApproval({ ...ctx, userId: 'bob' }, id, approval!.approvalId, {
      decision: 'deny',
      reason: 'over limit',
    });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    expect(t.executed).toEqual([]);
    const toolMessage = t.model.calls[1]!.messages.find((m) => m.role === 'tool') as { content: string };
    expect(toolMessage.content).toContain('denied by bob: over limit');
  });

  it('runs an approved call once, then completes', async () => {
    const t = await setup({
      'refund order 3': [
        { toolCalls: [{ toolCallId: 'call_a', name: 'refund', args: { id: '3' } }] },
        { text: 'Refunded.' },
      ],
    });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'refund order 3' });
    await eventuallyTrue(
      async () => (await t.conversations.get('acme', id)).pendingApprovals.length === 1,
      5_000,
    );
    const [approval] = (await t.conversations.get('acme', id)).pendingApprovals;
    await t.conversations.decideApproval(ctx, id, approval!.approvalId, { decision: 'approve' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    expect(t.executed).toHaveLength(1);
  });

  it('cancel aborts the in-flight model call and ends the turn', async () => {
    const t = await setup({ 'think forever': [{ hang: true }] });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'think forever' });
    await eventuallyTrue(() => t.model.calls.length === 1, 5_000);
    await t.conversations.cancel(ctx, id);
    await eventuallyTrue(() => t.model.calls[0]!.signal.aborted, 5_000);
    const events = await t.store.read('acme', `conversation-${id}`);
    expect(events.map((e) => e.type)).toEqual([
      'ConversationCreated',
      'UserMessageAdded',
      'TurnStarted',
      'TurnCancelled',
    ]);
  });

  it('a model failure fails the turn with a typed error; invalid arguments go back to the model', async () => {
    const t = await setup({
      'break please': [{ fail: 'upstream 500' }],
      'look up order x': [
        { toolCalls: [{ toolCallId: 'call_bad', name: 'lookup', args: { id: 7 } }] },
        { text: 'Sorry.' },
      ],
    });
    stop = t.stop;
    const a = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, a.id, { content: 'break please' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', a.id)).status === 'failed', 5_000);
    const b = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, b.id, { content: 'look up order x' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', b.id)).status === 'idle', 5_000);
    expect(t.executed).toEqual([]);
    const tool = (await t.conversations.get('acme', b.id)).messages.find((m) => m.role === 'tool');
    expect(tool?.content).toContain('invalid_arguments');
  });

  it('a call to a tool named like a prototype member is a tool error the model sees, and the turn ends', async () => {
    const t = await setup({
      'use the odd tools': [
        {
          toolCalls: [
            { toolCallId: 'c1', name: 'constructor', args: { id: '1' } },
            { toolCallId: 'c2', name: 'toString', args: { id: '2' } },
            { toolCallId: 'c3', name: '__proto__', args: { id: '3' } },
          ],
        },
        { text: 'Done without them.' },
      ],
    });
    stop = t.stop;
    // An agent stored before names were checked against own properties lists `constructor`.
    await t.store.append('acme', streamName('tenantconfig', 'acme'), [
      {
        type: 'AgentConfigured',
        data: {
          agent: {
            agentId: 'odd',
            model: 'openai:gpt-test',
            instructions: '',
            tools: ['constructor', 'toString', 'lookup'],
            maxSteps: 4,
            temperature: 0,
            toolResultMaxChars: 2_000,
          },
          at: 'now',
        },
        metadata: {},
      },
    ]);
    const { id } = await t.conversations.create(ctx, { agentId: 'odd' });
    await t.conversations.send(ctx, id, { content: 'use the odd tools' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    const view = await t.conversations.get('acme', id);
    const results = view.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(results).toHaveLength(3);
    for (const content of results) expect(content).toContain('unknown_tool');
    expect(view.messages.at(-1)?.content).toBe('Done without them.');
    expect(t.executed).toEqual([]);
    expect(t.model.calls[0]!.tools.map((tool) => tool.name)).toEqual(['lookup']);
  });

  it('tool-call arguments nested 10,000 deep are refused to the model, not thrown at the log', async () => {
    let deep: unknown = '7';
    for (let i = 0; i < 10_000; i++) deep = { id: deep };
    const t = await setup({
      'deep args': [{ toolCalls: [{ toolCallId: 'c1', name: 'lookup', args: deep }] }, { text: 'Gave up.' }],
    });
    stop = t.stop;
    const { id } = await t.conversations.create(ctx, { agentId: 'support' });
    await t.conversations.send(ctx, id, { content: 'deep args' });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    const view = await t.conversations.get('acme', id);
    expect(view.messages.find((m) => m.role === 'tool')?.content).toContain('invalid_arguments');
    expect(view.messages.at(-1)?.content).toBe('Gave up.');
    expect(t.executed).toEqual([]);
  });

  it('a conversation cannot be created for an agent named like a prototype member', async () => {
    const t = await setup({});
    stop = t.stop;
    for (const agentId of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) {
      await expect(t.conversations.create(ctx, { agentId })).rejects.toThrow(/not found/);
    }
  });

  it('two workers on one durable: each step runs once, across many conversations at once', async () => {
    const scripts: Record<string, Script> = {};
    for (let i = 0; i < 12; i++) {
      scripts[`q${i}`] = [
        { toolCalls: [{ toolCallId: `c${i}`, name: 'lookup', args: { id: `${i}` } }] },
        { text: `a${i}` },
      ];
    }
    const t = await setup(scripts, { workers: 2 });
    stop = t.stop;
    const ids = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const { id } = await t.conversations.create(ctx, { agentId: 'support' });
        await t.conversations.send(ctx, id, { content: `q${i}` });
        return id;
      }),
    );
    await eventuallyTrue(async () => {
      const views = await Promise.all(ids.map((id) => t.conversations.get('acme', id)));
      return views.every((v) => v.status === 'idle');
    }, 10_000);
    expect(t.model.calls).toHaveLength(24);
    expect(new Set(t.executed).size).toBe(12);
  });

  it('narrows every step by the intent TurnStarted recorded: an edit of the intents mid-turn changes nothing', async () => {
    const t = await setup({
      'where is order 9?': [
        { toolCalls: [{ toolCallId: 'call_1', name: 'lookup', args: { id: '9' } }] },
        { text: 'Order 9 is on its way.' },
      ],
    });
    stop = t.stop;
    const agent = {
      agentId: 'narrow',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: ['lookup', 'refund'],
      maxSteps: 4,
      temperature: 0,
      toolResultMaxChars: 2_000,
    };
    const intents = [{ name: 'track', keywords: ['where'], tools: ['lookup'], guidance: 'Look it up.' }];
    await t.config.apply(ctx, { type: 'PutAgent', agent: { ...agent, options: { intents } }, at: 'now' });
    const { id } = await t.conversations.create(ctx, { agentId: 'narrow' });
    await t.conversations.send(ctx, id, { content: 'where is order 9?' });
    // Mid-turn the intent is renamed and offers the other tool: the running turn keeps its own.
    const edited = [{ name: 'refunds', keywords: ['where'], tools: ['refund'], guidance: 'Refund it.' }];
    await t.config.apply(ctx, {
      type: 'PutAgent',
      agent: { ...agent, options: { intents: edited } },
      at: 'now',
    });
    await eventuallyTrue(async () => (await t.conversations.get('acme', id)).status === 'idle', 5_000);
    expect(t.model.calls).toHaveLength(2);
    for (const call of t.model.calls) {
      expect(call.tools.map((tool) => tool.name)).toEqual(['lookup']);
      expect(call.messages[0]!.content).toContain('track (confidence 1): Look it up.');
    }
    const started = (await t.store.read('acme', `conversation-${id}`)).find((e) => e.type === 'TurnStarted')!;
    expect(started.data).toMatchObject({
      intent: 'track',
      confidence: 1,
      agent: { matchedIntent: intents[0] },
    });
  });
});
