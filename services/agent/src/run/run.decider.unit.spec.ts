import { ConflictError, NotFoundError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { RunEvent, TeamDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { fold } from '@keel/core';
import { runDecider } from './run.decider.js';
import { runUsage, usageByAgent } from './run.state.js';

const at = '2026-11-24T03:00:00.000Z';
const spec = DeciderSpec.for(runDecider);
const team: TeamDefinition = {
  teamId: 'blog',
  topology: 'pipeline',
  members: [{ agentId: 'researcher', role: 'Researcher', position: 1 }],
  aggregation: 'last',
  timeoutMs: 60_000,
  maxSteps: 50,
  contextCharLimit: 8_000,
};
const usage = { promptTokens: 10, completionTokens: 5, costUsd: 0.5, modelCalls: 2 };
const started: RunEvent = {
  type: 'RunStarted',
  data: { runId: 'r1', team, input: 'Q', metadata: {}, deadlineAt: '2026-11-24T03:01:00.000Z', at },
};
const task = {
  taskId: 'r1.0',
  index: 0,
  agentId: 'researcher',
  role: 'Researcher',
  round: 1,
  conversationId: 'c1',
  input: 'Q',
  at,
};
const taskStarted: RunEvent = { type: 'TaskStarted', data: task };
const taskCompleted: RunEvent = { type: 'TaskCompleted', data: { taskId: 'r1.0', output: 'A', usage, at } };

describe('run aggregate', () => {
  it('starts once, with its deadline timeoutMs after the start; a repeated start changes nothing', () => {
    spec
      .given([])
      .when({ type: 'StartRun', runId: 'r1', team, input: 'Q', metadata: {}, at })
      .then([started]);
    spec
      .given([started])
      .when({ type: 'StartRun', runId: 'r1', team, input: 'Q', metadata: {}, at })
      .then([]);
    // The same Idempotency-Key (same run id) with another input or metadata: a conflict.
    spec
      .given([started])
      .when({ type: 'StartRun', runId: 'r1', team, input: 'Other', metadata: {}, at })
      .thenThrows(ConflictError, /Idempotency-Key/);
    spec
      .given([started])
      .when({ type: 'StartRun', runId: 'r1', team, input: 'Q', metadata: { a: '1' }, at })
      .thenThrows(ConflictError, /Idempotency-Key/);
  });

  it('starts a plan slot at most once, and none after the run ended', () => {
    spec
      .given([started])
      .when({ type: 'StartTask', ...task })
      .then([taskStarted]);
    spec
      .given([started, taskStarted])
      .when({ type: 'StartTask', ...task, conversationId: 'other' })
      .then([]);
    const cancelled: RunEvent = { type: 'RunCancelled', data: { runId: 'r1', at } };
    spec
      .given([started, cancelled])
      .when({ type: 'StartTask', ...task })
      .then([]);
    spec
      .given([])
      .when({ type: 'StartTask', ...task })
      .thenThrows(NotFoundError);
  });

  it('ends a task once: a second outcome (a redelivered turn event) is dropped', () => {
    const complete = { type: 'CompleteTask' as const, taskId: 'r1.0', output: 'A', usage, at };
    spec.given([started, taskStarted]).when(complete).then([taskCompleted]);
    spec.given([started, taskStarted, taskCompleted]).when(complete).then([]);
    spec
      .given([started, taskStarted, taskCompleted])
      .when({ type: 'FailTask', taskId: 'r1.0', error: { code: 'x', message: 'y' }, usage, at })
      .then([]);
    spec.given([started]).when(complete).then([]);
  });

  it('cancels a running run, its running tasks with it; cancelling an ended run is a conflict', () => {
    const cancelled: RunEvent = { type: 'RunCancelled', data: { runId: 'r1', at } };
    spec.given([started, taskStarted]).when({ type: 'CancelRun', at }).then([cancelled]);
    const state = fold(runDecider, [started, taskStarted, cancelled]);
    expect(state.status).toBe('cancelled');
    expect(state.tasks.map((t) => t.status)).toEqual(['cancelled']);
    spec.given([started, cancelled]).when({ type: 'CancelRun', at }).thenThrows(ConflictError);
    const completed: RunEvent = { type: 'RunCompleted', data: { output: 'A', at } };
    spec
      .given([started, taskStarted, taskCompleted, completed])
      .when({ type: 'CancelRun', at })
      .thenThrows(ConflictError);
    spec.given([]).when({ type: 'CancelRun', at }).thenThrows(NotFoundError);
  });

  it('completes or fails once; keeps usage per run and per member agent', () => {
    const completed: RunEvent = { type: 'RunCompleted', data: { output: 'A', at } };
    spec
      .given([started, taskStarted, taskCompleted])
      .when({ type: 'CompleteRun', output: 'A', at })
      .then([completed]);
    spec
      .given([started, taskStarted, taskCompleted, completed])
      .when({ type: 'FailRun', error: { code: 'timeout', message: 'late' }, at })
      .then([]);
    const state = fold(runDecider, [started, taskStarted, taskCompleted, completed]);
    expect(runUsage(state)).toEqual(usage);
    expect(usageByAgent(state)).toEqual([{ agentId: 'researcher', ...usage }]);
  });
});
