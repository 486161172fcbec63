// The run manager's IO on the in-memory store, two instances sharing it as two agent processes
// would: however often and however concurrently a run is advanced (a redelivered event, another
// instance, a process killed between two steps), each task is started once, as one conversation
// with one turn.
import { InMemoryEventBus, InMemoryEventStore } from '@keel/core';
import type { TeamDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { acceptedRequestOf } from '../grpc/accepted-request.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { RUN_ID_KEY, RunManager, TASK_ID_KEY } from './run-manager.js';
import { RunService } from './run.service.js';

const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const usage = { promptTokens: 1, completionTokens: 1, costUsd: 0, modelCalls: 1 };

const setup = async () => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
  const config = new TenantConfigService(store);
  for (const agentId of ['a', 'b']) {
    const agent = {
      agentId,
      model: 'openai:m',
      instructions: '',
      tools: [],
      maxSteps: 2,
      temperature: 0,
      toolResultMaxChars: 2_000,
    };
    await config.apply(ctx, { type: 'PutAgent', agent, at: 'now' });
  }
  const team: TeamDefinition = {
    teamId: 'line',
    topology: 'pipeline',
    members: [
      { agentId: 'a', role: 'A', position: 1 },
      { agentId: 'b', role: 'B', position: 2 },
    ],
    aggregation: 'last',
    timeoutMs: 600_000,
    maxSteps: 50,
    contextCharLimit: 100,
  };
  await config.apply(ctx, { type: 'PutTeam', team, at: 'now' });
  const runs = new RunService(store, config);
  /** One agent process: its own services and manager over the shared store. */
  const instance = () => {
    const conversations = new ConversationService(store, bus, config);
    return {
      conversations,
      manager: new RunManager({ store, bus, runs, conversations, logger: {} as never }),
    };
  };
  const turnsOf = async (conversationId: string) =>
    (await store.read('acme', `conversation-${conversationId}`)).filter((e) => e.type === 'UserMessageAdded');
  /** Every message submitted in the tenant, whatever conversation: an orphan turn would show here. */
  const allTurns = async () =>
    (await store.readAll({ scope: { tenantId: 'acme' } })).events.filter(
      (e) => e.type === 'UserMessageAdded',
    );
  return { store, runs, instance, turnsOf, allTurns };
};

describe('the run manager, redelivered and raced', () => {
  it('starts each task once however often and wherever the run is advanced', async () => {
    const { runs, instance, turnsOf, allTurns } = await setup();
    const [one, two] = [instance(), instance()];
    const { runId } = await runs.start(ctx, { teamId: 'line', input: 'Q', metadata: {} });
    await Promise.all([one.manager.advance('acme', runId), two.manager.advance('acme', runId)]);
    await one.manager.advance('acme', runId);
    let run = await runs.get('acme', runId);
    expect(run.tasks.map((t) => t.agentId)).toEqual(['a']);
    expect(await turnsOf(run.tasks[0]!.conversationId)).toHaveLength(1);

    await runs.apply('acme', runId, {
      type: 'CompleteTask',
      taskId: run.tasks[0]!.taskId,
      output: 'x',
      usage,
      at: 'now',
    });
    await Promise.all([one.manager.advance('acme', runId), two.manager.advance('acme', runId)]);
    run = await runs.get('acme', runId);
    expect(run.tasks.map((t) => t.agentId)).toEqual(['a', 'b']);
    const turns = await turnsOf(run.tasks[1]!.conversationId);
    expect(turns).toHaveLength(1);
    expect(await allTurns()).toHaveLength(2);
    expect((turns[0]!.data as { content: string }).content).toBe(
      'Q\n\nEarlier outputs, newest first:\n\n[A, round 1]\nx',
    );
  });

  it('submits the turn of a task recorded as started by a process killed before it submitted', async () => {
    const { runs, instance, turnsOf } = await setup();
    const { conversations, manager } = instance();
    const { runId } = await runs.start(ctx, { teamId: 'line', input: 'Q', metadata: {} });
    // What the dead process did: the task's conversation, and the task recorded; no turn yet.
    const taskId = `${runId}.0`;
    const conversation = await conversations.create(
      ctx,
      { agentId: 'a', metadata: { [RUN_ID_KEY]: runId, [TASK_ID_KEY]: taskId } },
      acceptedRequestOf('CreateConversation', `run:${taskId}`, { agentId: 'a' }),
    );
    const task = {
      taskId,
      index: 0,
      agentId: 'a',
      role: 'A',
      round: 1,
      conversationId: conversation.id,
      input: 'Q',
    };
    await runs.apply('acme', runId, { type: 'StartTask', ...task, at: 'now' });
    expect(await turnsOf(conversation.id)).toHaveLength(0);
    await manager.advance('acme', runId);
    await manager.advance('acme', runId);
    expect(await turnsOf(conversation.id)).toHaveLength(1);
    expect((await runs.get('acme', runId)).tasks).toHaveLength(1);
  });
});
