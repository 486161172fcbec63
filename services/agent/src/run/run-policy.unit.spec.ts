import type { TeamDefinition } from '@keel/events';
import { fold } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { contextOf } from './run-plan.js';
import { nextActions, taskOutcomeOf } from './run-policy.js';
import type { SeenTask } from './run-simulation.js';
import { runDecider } from './run.decider.js';
import { simulateRun } from './run-simulation.js';

const team = (over: Partial<TeamDefinition>): TeamDefinition => ({
  teamId: 't',
  topology: 'pipeline',
  members: [
    // Listed out of order: the plan goes by position.
    { agentId: 'writer', role: 'Writer', position: 2 },
    { agentId: 'researcher', role: 'Researcher', position: 1 },
    { agentId: 'editor', role: 'Editor', position: 3 },
  ],
  aggregation: 'last',
  timeoutMs: 60_000,
  maxSteps: 50,
  contextCharLimit: 8_000,
  ...over,
});

/** Each member answers `<agentId>#<index>`. */
const named = (task: SeenTask): string => `${task.agentId}#${task.index}`;
const order = (seen: SeenTask[]) => seen.map((s) => `${s.agentId}@${s.round}`);

describe('run policy: topologies', () => {
  it('pipeline: members in position order, each seeing the input and earlier outputs newest first', () => {
    const { state, seen } = simulateRun(team({}), 'Write about owls.', named);
    expect(order(seen)).toEqual(['researcher@1', 'writer@1', 'editor@1']);
    expect(seen[0]!.input).toBe('Write about owls.');
    expect(seen[2]!.input).toBe(
      'Write about owls.\n\nEarlier outputs, newest first:\n\n[Writer, round 1]\nwriter#1\n\n[Researcher, round 1]\nresearcher#0',
    );
    expect(state.status).toBe('completed');
    expect(state.output).toBe('editor#2');
  });

  it('parallel: every member at once on the input alone', () => {
    const { seen, events } = simulateRun(team({ topology: 'parallel' }), 'Q', named);
    expect(seen.map((s) => s.input)).toEqual(['Q', 'Q', 'Q']);
    // All three tasks start before any completes.
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['RunStarted', 'TaskStarted', 'TaskStarted', 'TaskStarted']);
  });

  it("debate: rounds in which each member answers seeing the others' previous answers", () => {
    const { seen, state } = simulateRun(team({ topology: 'debate', rounds: 2 }), 'Q', named);
    expect(order(seen)).toEqual([
      'researcher@1',
      'writer@1',
      'editor@1',
      'researcher@2',
      'writer@2',
      'editor@2',
    ]);
    expect(seen.slice(0, 3).every((s) => s.input === 'Q')).toBe(true);
    // The writer in round 2 sees the editor's and the researcher's round-1 answers, not its own.
    expect(seen[4]!.input).toBe(
      'Q\n\nEarlier outputs, newest first:\n\n[Editor, round 1]\neditor#2\n\n[Researcher, round 1]\nresearcher#0',
    );
    expect(state.tasks.map((t) => t.round)).toEqual([1, 1, 1, 2, 2, 2]);
  });

  it('round_robin: members in order, rounds times, each seeing all earlier outputs', () => {
    const two = team({
      topology: 'round_robin',
      rounds: 2,
      members: [
        { agentId: 'a', role: 'A', position: 1 },
        { agentId: 'b', role: 'B', position: 2 },
      ],
    });
    const { seen } = simulateRun(two, 'Q', named);
    expect(order(seen)).toEqual(['a@1', 'b@1', 'a@2', 'b@2']);
    expect(seen[3]!.input).toBe(
      'Q\n\nEarlier outputs, newest first:\n\n[A, round 2]\na#2\n\n[B, round 1]\nb#1\n\n[A, round 1]\na#0',
    );
  });

  it('debate: a member answers its later rounds in the conversation its first round began', () => {
    const { events } = simulateRun(team({ topology: 'debate', rounds: 2 }), 'Q', named);
    const afterRound1 = fold(runDecider, events.slice(0, 7));
    const round2 = nextActions(afterRound1, '2026-11-24T03:00:00.000Z');
    expect(round2.map((a) => (a.type === 'StartTask' ? `${a.agentId}:${a.conversationId}` : a.type))).toEqual(
      ['researcher:conv-run1.0', 'writer:conv-run1.1', 'editor:conv-run1.2'],
    );
    const pipelined = simulateRun(team({}), 'Q', named).events.slice(0, 3);
    expect(nextActions(fold(runDecider, pipelined), '2026-11-24T03:00:00.000Z')[0]).not.toHaveProperty(
      'conversationId',
    );
  });

  it("hierarchical: one task, the manager's, told its members as its sub-agent tools", () => {
    const hierarchical = team({ topology: 'hierarchical', manager: 'lead' });
    const { seen, state } = simulateRun(hierarchical, 'Q', named);
    expect(order(seen)).toEqual(['lead@1']);
    expect(seen[0]!.input).toContain(
      '- Researcher (researcher): the tool agent__researcher\n- Writer (writer): the tool agent__writer\n- Editor (editor): the tool agent__editor',
    );
    expect(state.output).toBe('lead#0');
    const [start] = nextActions({ ...state, status: 'running', tasks: [] }, new Date(0).toISOString());
    expect(start).toMatchObject({
      type: 'StartTask',
      agentId: 'lead',
      delegates: ['writer', 'researcher', 'editor'],
    });
  });
});

describe('run policy: context cut', () => {
  it('cuts the earlier outputs to contextCharLimit in all, the oldest falling off first', () => {
    const limit = 40;
    const { seen } = simulateRun(
      team({ contextCharLimit: limit }),
      'Q',
      (t) => `${t.agentId}:${'x'.repeat(30)}`,
    );
    const context = seen[2]!.input.split('Earlier outputs, newest first:\n\n')[1]!;
    expect(context.length).toBe(limit);
    expect(context).toBe(`[Writer, round 1]\nwriter:${'x'.repeat(15)}`);
    expect(contextOf([{ index: 0, role: 'R', round: 1, output: 'abc' }], 0)).toBe('');
  });

  it('passes no context section at all when the limit is 0', () => {
    const { seen } = simulateRun(team({ contextCharLimit: 0 }), 'Q', named);
    expect(seen.map((s) => s.input)).toEqual(['Q', 'Q', 'Q']);
  });
});

describe('run policy: aggregations', () => {
  const parallel = (aggregation: TeamDefinition['aggregation']) =>
    team({ topology: 'parallel', aggregation });

  it('last: the last task’s output', () => {
    expect(simulateRun(parallel('last'), 'Q', named).state.output).toBe('editor#2');
  });

  it('merge: every final output under its role’s heading, in position order', () => {
    const { state } = simulateRun(team({ topology: 'debate', rounds: 2, aggregation: 'merge' }), 'Q', named);
    expect(state.output).toBe(
      '## Researcher\n\nresearcher#3\n\n## Writer\n\nwriter#4\n\n## Editor\n\neditor#5',
    );
  });

  it('vote: the answer most members gave, trimmed and case-insensitive', () => {
    const answers: Record<string, string> = { researcher: 'Blue', writer: ' blue ', editor: 'Red' };
    expect(simulateRun(parallel('vote'), 'Q', (t) => answers[t.agentId]!).state.output).toBe('Blue');
  });

  it('vote: a tie goes to the answer of the lowest position', () => {
    const four = team({
      topology: 'parallel',
      aggregation: 'vote',
      members: [
        { agentId: 'd', role: 'D', position: 4 },
        { agentId: 'c', role: 'C', position: 3 },
        { agentId: 'b', role: 'B', position: 2 },
        { agentId: 'a', role: 'A', position: 1 },
      ],
    });
    const answers: Record<string, string> = { a: 'no', b: 'YES', c: 'yes', d: ' No ' };
    expect(simulateRun(four, 'Q', (t) => answers[t.agentId]!).state.output).toBe('no');
    const flipped: Record<string, string> = { a: 'maybe', b: 'YES', c: 'no', d: 'yes' };
    expect(simulateRun(four, 'Q', (t) => flipped[t.agentId]!).state.output).toBe('YES');
  });
});

describe('run policy: limits and failures', () => {
  it('fails the run when a task fails, starting nothing after it', () => {
    const { state, seen } = simulateRun(team({}), 'Q', (t) =>
      t.agentId === 'writer' ? { error: 'boom' } : 'ok',
    );
    expect(order(seen)).toEqual(['researcher@1', 'writer@1']);
    expect(state.status).toBe('failed');
    expect(state.error).toEqual({ code: 'task_failed', message: 'task run1.1 (Writer) failed: boom' });
  });

  it('fails with max_steps once the members’ model calls are spent and tasks are left', () => {
    const { state, seen } = simulateRun(team({ maxSteps: 2 }), 'Q', named);
    expect(seen).toHaveLength(2);
    expect(state.error?.code).toBe('max_steps');
  });

  it('fails with max_steps before the next call of a task still running at the limit, not after it', () => {
    const { events } = simulateRun(team({ maxSteps: 5 }), 'Q', named);
    const running = fold(runDecider, events.slice(0, 4)); // started, task 0 done, task 1 started
    expect(running.tasks.map((t) => t.status)).toEqual(['completed', 'running']);
    const now = '2026-11-24T03:00:00.000Z';
    expect(nextActions(running, now, { modelCalls: 3, open: 1 })).toEqual([]);
    expect(nextActions(running, now, { modelCalls: 4, open: 1 })).toMatchObject([
      { type: 'FailRun', error: { code: 'max_steps' } },
    ]);
    // Its turn ended within the limit: nothing to fail (its outcome is recorded next).
    expect(nextActions(running, now, { modelCalls: 4, open: 0 })).toEqual([]);
  });

  it('starts no more tasks at once than model calls are left', () => {
    const { events } = simulateRun(team({ topology: 'parallel', maxSteps: 2 }), 'Q', named);
    const started = fold(runDecider, events.slice(0, 1));
    expect(nextActions(started, '2026-11-24T03:00:00.000Z').map((a) => a.type)).toEqual([
      'StartTask',
      'StartTask',
    ]);
  });

  it('completes when the last task uses the last model call', () => {
    expect(simulateRun(team({ maxSteps: 3 }), 'Q', named).state.status).toBe('completed');
  });

  it('fails with timeout once the deadline has passed', () => {
    let ms = Date.parse('2026-11-24T03:00:00.000Z');
    const clock = () => new Date((ms += 25_000)).toISOString();
    const { state, seen } = simulateRun(team({ timeoutMs: 60_000 }), 'Q', named, clock);
    expect(state.error?.code).toBe('timeout');
    expect(seen.length).toBeLessThan(3);
  });
});

describe('run policy: a task’s turn', () => {
  const at = '2026-11-24T03:00:00.000Z';
  const usage = (promptTokens: number) => ({
    type: 'UsageRecorded' as const,
    data: {
      turnId: 't',
      step: 0,
      at,
      model: 'm',
      promptTokens,
      completionTokens: 1,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.25,
    },
  });
  const said = (text: string) => ({
    type: 'AssistantMessageCompleted' as const,
    data: { turnId: 't', step: 0, messageId: text, text, toolCalls: [], at },
  });

  it('completes the task with the turn’s last text and its usage, once the turn completed', () => {
    const running = [said('thinking'), usage(3), said('final'), usage(4)];
    expect(taskOutcomeOf({ taskId: 'r.0' }, running, at)).toBeUndefined();
    const ended = [
      ...running,
      { type: 'TurnCompleted' as const, data: { turnId: 't', finishReason: 'stop' as const, at } },
    ];
    expect(taskOutcomeOf({ taskId: 'r.0' }, ended, at)).toEqual({
      type: 'CompleteTask',
      taskId: 'r.0',
      output: 'final',
      usage: { promptTokens: 7, completionTokens: 2, costUsd: 0.5, modelCalls: 2 },
      at,
    });
  });

  it('fails the task with the turn’s error, or as cancelled', () => {
    const failedTurn = {
      type: 'TurnFailed' as const,
      data: { turnId: 't', error: { code: 'model_error', message: 'down' }, at },
    };
    expect(taskOutcomeOf({ taskId: 'r.0' }, [usage(1), failedTurn], at)).toMatchObject({
      type: 'FailTask',
      error: { code: 'model_error', message: 'down' },
      usage: { modelCalls: 1 },
    });
    const cancelled = { type: 'TurnCancelled' as const, data: { turnId: 't', by: 'u', at } };
    expect(taskOutcomeOf({ taskId: 'r.0' }, [cancelled as never], at)).toMatchObject({
      error: { code: 'cancelled' },
    });
  });
});
