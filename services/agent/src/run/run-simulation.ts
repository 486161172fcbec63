// A run driven to its end in memory, for the policy's unit specs: the decider folds the events,
// the policy decides, and `answer` plays each member's turn. No IO.
import { fold } from '@keel/core';
import type { RunEvent, TaskUsage, TeamDefinition } from '@keel/events';
import { runDecider } from './run.decider.js';
import type { RunCommand } from './run.decider.js';
import { nextActions } from './run-policy.js';
import type { RunState } from './run.state.js';

/** A task as the simulated member saw it. */
export interface SeenTask {
  index: number;
  agentId: string;
  round: number;
  input: string;
}

/** How a simulated member answers: its output, or an error it fails with. */
export type Answer = (task: SeenTask) => string | { error: string };

const ONE_CALL: TaskUsage = { promptTokens: 10, completionTokens: 5, costUsd: 0.001, modelCalls: 1 };

/**
 * Starts a run of `team` on `input` and plays it out: each wave of started tasks is answered
 * (in plan order) before the policy decides again. `clock` gives each decision's time.
 */
export const simulateRun = (
  team: TeamDefinition,
  input: string,
  answer: Answer,
  clock: () => string = () => '2026-11-24T03:00:00.000Z',
): { state: RunState; seen: SeenTask[]; events: RunEvent[] } => {
  const events: RunEvent[] = [];
  const apply = (command: RunCommand): void => {
    events.push(...runDecider.decide(command, fold(runDecider, events)));
  };
  apply({ type: 'StartRun', runId: 'run1', team, input, metadata: {}, at: clock() });
  const seen: SeenTask[] = [];
  for (let guard = 0; guard < 1_000; guard++) {
    const actions = nextActions(fold(runDecider, events), clock());
    if (actions.length === 0) break;
    for (const action of actions) {
      if (action.type === 'CompleteRun') apply({ ...action, at: clock() });
      if (action.type === 'FailRun') apply({ ...action, at: clock() });
      if (action.type === 'StartTask') {
        const { type: _type, ...task } = action;
        apply({ type: 'StartTask', ...task, conversationId: `conv-${task.taskId}`, at: clock() });
      }
    }
    for (const action of actions) {
      if (action.type !== 'StartTask') continue;
      const task = { index: action.index, agentId: action.agentId, round: action.round, input: action.input };
      seen.push(task);
      const out = answer(task);
      apply(
        typeof out === 'string'
          ? { type: 'CompleteTask', taskId: action.taskId, output: out, usage: ONE_CALL, at: clock() }
          : {
              type: 'FailTask',
              taskId: action.taskId,
              error: { code: 'model_error', message: out.error },
              usage: ONE_CALL,
              at: clock(),
            },
      );
    }
  }
  return { state: fold(runDecider, events), seen, events };
};
