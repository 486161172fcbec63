import type { ConversationEvent, RunFailure, TaskUsage } from '@keel/events';
import type { RunCommand } from './run.decider.js';
import { aggregate } from './run-aggregation.js';
import type { PlanSlot, SeenOutput } from './run-plan.js';
import { planOf, taskInputOf } from './run-plan.js';
import type { RunState, RunTaskState } from './run.state.js';
import { NO_USAGE, addUsage, hasEnded, runUsage, taskIdOf } from './run.state.js';

/**
 * What the process manager does next for a run. `StartTask` is a turn to begin in a new
 * conversation of `agentId` (the IO side creates it and records the task, both keyed by
 * `taskId`, so a repeat starts nothing twice).
 */
export type RunAction =
  | {
      type: 'StartTask';
      taskId: string;
      index: number;
      agentId: string;
      role: string;
      round: number;
      input: string;
      /** The hierarchical manager's task: the members, offered to its conversation as sub-agents. */
      delegates?: string[];
      /** A debate member's later round: a turn of the conversation its first round began. */
      conversationId?: string;
    }
  | { type: 'CompleteRun'; output: string }
  | { type: 'FailRun'; error: RunFailure };

/**
 * The conversation a debate member's later round continues: its first round's (plan index
 * `index mod members`), so the member answers with its own earlier answers in its history.
 */
const continuedConversation = (state: RunState, slot: PlanSlot): { conversationId?: string } => {
  const team = state.team;
  if (team?.topology !== 'debate' || slot.round === 1) return {};
  const first = state.tasks.find((t) => t.index === slot.index % team.members.length);
  return first ? { conversationId: first.conversationId } : {};
};

/** Model calls of tasks still running, as their conversations have recorded them so far. */
export interface LiveUsage {
  modelCalls: number;
  /** Running tasks whose turn has not ended: each would make at least one more model call. */
  open?: number;
}

const failed = (code: string, message: string): RunAction[] => [
  { type: 'FailRun', error: { code, message } },
];

const completedOf = (state: RunState): Map<number, RunTaskState> =>
  new Map(state.tasks.filter((t) => t.status === 'completed').map((t) => [t.index, t]));

const seenBy = (slot: PlanSlot, plan: readonly PlanSlot[], done: Map<number, RunTaskState>): SeenOutput[] =>
  slot.sees.map((i) => ({
    index: i,
    role: plan[i]!.role,
    round: plan[i]!.round,
    output: done.get(i)?.output ?? '',
  }));

/**
 * The run's next actions, from its state alone (pure): fail it when its time is up, a task
 * failed or the team's model calls are spent; complete it with the aggregated output once every
 * planned task completed; else start every planned task whose predecessors completed.
 */
export const nextActions = (
  state: RunState,
  now: string,
  live: LiveUsage = { modelCalls: 0 },
): RunAction[] => {
  const team = state.team;
  if (!team || hasEnded(state)) return [];
  if (Date.parse(now) >= Date.parse(state.deadlineAt)) {
    return failed('timeout', `the run exceeded its time limit of ${team.timeoutMs} ms`);
  }
  const failure = state.tasks.find((t) => t.status === 'failed' || t.status === 'cancelled');
  if (failure) {
    const why = failure.error?.message ?? failure.status;
    return failed('task_failed', `task ${failure.taskId} (${failure.role}) failed: ${why}`);
  }
  const used = runUsage(state).modelCalls + live.modelCalls;
  if (used > team.maxSteps)
    return failed('max_steps', `the run exceeded maxSteps (${team.maxSteps} model calls)`);
  // Enforced before the next call, not after it: a turn still open at the limit would exceed it.
  if (used >= team.maxSteps && (live.open ?? 0) > 0) {
    return failed(
      'max_steps',
      `the run reached maxSteps (${team.maxSteps} model calls) with a task still running`,
    );
  }
  const plan = planOf(team);
  const done = completedOf(state);
  if (done.size === plan.length) {
    const outputs = plan.map((slot) => ({ slot, output: done.get(slot.index)?.output ?? '' }));
    return [{ type: 'CompleteRun', output: aggregate(team.aggregation, outputs) }];
  }
  const started = new Set(state.tasks.map((t) => t.index));
  const ready = plan.filter((slot) => !started.has(slot.index) && slot.after.every((i) => done.has(i)));
  if (ready.length > 0 && used >= team.maxSteps) {
    return failed('max_steps', `the run reached maxSteps (${team.maxSteps} model calls) with tasks left`);
  }
  // Each task makes at least one model call: no more start at once than the calls left.
  return ready.slice(0, team.maxSteps - used).map((slot) => ({
    type: 'StartTask',
    taskId: taskIdOf(state.runId, slot.index),
    index: slot.index,
    agentId: slot.agentId,
    role: slot.role,
    round: slot.round,
    input: taskInputOf(team, slot, state.input, seenBy(slot, plan, done)),
    ...(slot.delegates ? { delegates: team.members.map((m) => m.agentId) } : {}),
    ...continuedConversation(state, slot),
  }));
};

/** A turn's usage from its conversation's events: tokens and cost summed, one model call per usage event. */
export const turnUsageOf = (events: readonly ConversationEvent[]): TaskUsage =>
  events.reduce(
    (sum, e) =>
      e.type === 'UsageRecorded'
        ? addUsage(sum, {
            promptTokens: e.data.promptTokens,
            completionTokens: e.data.completionTokens,
            costUsd: e.data.costUsd ?? 0,
            modelCalls: 1,
          })
        : sum,
    NO_USAGE,
  );

/**
 * The command a task's conversation events call for (pure): once its turn ended, the task
 * completes with the turn's last assistant text, or fails with the turn's error (a cancelled
 * turn fails it as `cancelled`); undefined while the turn goes on.
 */
export const taskOutcomeOf = (
  task: Pick<RunTaskState, 'taskId'>,
  events: readonly ConversationEvent[],
  at: string,
): RunCommand | undefined => {
  const end = events.find(
    (e) => e.type === 'TurnCompleted' || e.type === 'TurnFailed' || e.type === 'TurnCancelled',
  );
  if (!end) return undefined;
  const usage = turnUsageOf(events);
  if (end.type === 'TurnCompleted') {
    const texts = events.flatMap((e) =>
      e.type === 'AssistantMessageCompleted' && e.data.text ? [e.data.text] : [],
    );
    return { type: 'CompleteTask', taskId: task.taskId, output: texts.at(-1) ?? '', usage, at };
  }
  const error =
    end.type === 'TurnFailed'
      ? { code: end.data.error.code, message: end.data.error.message }
      : { code: 'cancelled', message: "the task's turn was cancelled" };
  return { type: 'FailTask', taskId: task.taskId, error, usage, at };
};
