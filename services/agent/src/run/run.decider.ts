import type { Decider } from '@keel/core';
import { ConflictError, NotFoundError, ValidationError, canonicalJson } from '@keel/core';
import type { RunEvent, RunFailure, TaskUsage, TeamDefinition } from '@keel/events';
import type { RunState, RunTaskState, TaskStatus } from './run.state.js';
import { NO_USAGE, hasEnded } from './run.state.js';

/** Commands of the run aggregate; the process manager (run-policy.ts) decides most of them. */
export type RunCommand =
  | {
      type: 'StartRun';
      runId: string;
      team: TeamDefinition;
      input: string;
      metadata: Record<string, string>;
      at: string;
    }
  | {
      type: 'StartTask';
      taskId: string;
      index: number;
      agentId: string;
      role: string;
      round: number;
      conversationId: string;
      input: string;
      at: string;
    }
  | { type: 'CompleteTask'; taskId: string; output: string; usage: TaskUsage; at: string }
  | { type: 'FailTask'; taskId: string; error: RunFailure; usage: TaskUsage; at: string }
  | { type: 'CompleteRun'; output: string; at: string }
  | { type: 'FailRun'; error: RunFailure; at: string }
  | { type: 'CancelRun'; at: string };

type CommandOf<T extends RunCommand['type']> = Extract<RunCommand, { type: T }>;

/** Whether a repeated start (the same Idempotency-Key) asks for the same run: team, input and metadata. */
const sameStart = (state: RunState, command: CommandOf<'StartRun'>): boolean =>
  state.team?.teamId === command.team.teamId &&
  state.input === command.input &&
  canonicalJson(state.metadata) === canonicalJson(command.metadata);

const startRun = (command: CommandOf<'StartRun'>, state: RunState): RunEvent[] => {
  // A repeated start (a redelivery, a retry) changes nothing; the key with another request is a conflict.
  if (state.team) {
    if (sameStart(state, command)) return [];
    throw new ConflictError('Idempotency-Key was already used with a different request', {
      details: { field: 'Idempotency-Key' },
    });
  }
  const deadlineAt = new Date(Date.parse(command.at) + command.team.timeoutMs).toISOString();
  const { runId, team, input, metadata, at } = command;
  return [{ type: 'RunStarted', data: { runId, team, input, metadata, deadlineAt, at } }];
};

/** Invariant: a plan slot is started at most once, and only while the run goes on. */
const startTask = (command: CommandOf<'StartTask'>, state: RunState): RunEvent[] => {
  if (!state.team) throw new NotFoundError(`run ${command.taskId} not found`);
  if (hasEnded(state) || state.tasks.some((t) => t.index === command.index)) return [];
  const { type: _type, ...data } = command;
  return [{ type: 'TaskStarted', data }];
};

/** Invariant: a task ends once; an outcome for an ended task or an ended run is dropped. */
const endTask = (command: CommandOf<'CompleteTask'> | CommandOf<'FailTask'>, state: RunState): RunEvent[] => {
  const task = state.tasks.find((t) => t.taskId === command.taskId);
  if (!task || task.status !== 'running' || hasEnded(state)) return [];
  if (command.type === 'CompleteTask') {
    const { taskId, output, usage, at } = command;
    return [{ type: 'TaskCompleted', data: { taskId, output, usage, at } }];
  }
  const { taskId, error, usage, at } = command;
  return [{ type: 'TaskFailed', data: { taskId, error, usage, at } }];
};

const endRun = (command: CommandOf<'CompleteRun'> | CommandOf<'FailRun'>, state: RunState): RunEvent[] => {
  if (!state.team || hasEnded(state)) return [];
  return command.type === 'CompleteRun'
    ? [{ type: 'RunCompleted', data: { output: command.output, at: command.at } }]
    : [{ type: 'RunFailed', data: { error: command.error, at: command.at } }];
};

/** Cancel is the caller's: an ended run answers 409, as a conversation with no running turn does. */
const cancelRun = (command: CommandOf<'CancelRun'>, state: RunState): RunEvent[] => {
  if (!state.team) throw new NotFoundError('run not found');
  if (hasEnded(state))
    throw new ConflictError(
      `the run has already ${state.status === 'cancelled' ? 'been cancelled' : state.status}`,
    );
  return [{ type: 'RunCancelled', data: { runId: state.runId, at: command.at } }];
};

const withTask = (state: RunState, taskId: string, change: Partial<RunTaskState>): RunState => ({
  ...state,
  tasks: state.tasks.map((t) => (t.taskId === taskId ? { ...t, ...change } : t)),
});

/** Tasks still running when the run ends are cancelled with it (their turns are cancelled by the process manager). */
const endRunning = (state: RunState, status: TaskStatus, at: string): RunTaskState[] =>
  state.tasks.map((t) => (t.status === 'running' ? { ...t, status, completedAt: at } : t));

const evolve = (state: RunState, event: RunEvent): RunState => {
  switch (event.type) {
    case 'RunStarted': {
      const { runId, team, input, metadata, deadlineAt, at } = event.data;
      // Pending until its first task starts (API.md: POST /v1/runs answers `pending`).
      return { ...state, runId, team, input, metadata, deadlineAt, createdAt: at, status: 'pending' };
    }
    case 'TaskStarted': {
      const { at, ...task } = event.data;
      const started: RunTaskState = { ...task, status: 'running', startedAt: at, usage: NO_USAGE };
      return { ...state, status: 'running', tasks: [...state.tasks, started] };
    }
    case 'TaskCompleted': {
      const { taskId, output, usage, at } = event.data;
      return withTask(state, taskId, { status: 'completed', output, usage, completedAt: at });
    }
    case 'TaskFailed': {
      const { taskId, error, usage, at } = event.data;
      return withTask(state, taskId, { status: 'failed', error, usage, completedAt: at });
    }
    case 'RunCompleted':
      return { ...state, status: 'completed', output: event.data.output, endedAt: event.data.at };
    case 'RunFailed':
      return {
        ...state,
        status: 'failed',
        error: event.data.error,
        endedAt: event.data.at,
        tasks: endRunning(state, 'cancelled', event.data.at),
      };
    case 'RunCancelled':
      return {
        ...state,
        status: 'cancelled',
        endedAt: event.data.at,
        tasks: endRunning(state, 'cancelled', event.data.at),
      };
    default: {
      const _unknown: never = event;
      return state;
    }
  }
};

/** The run aggregate: a run's lifecycle and its tasks; every outcome lands once. */
export const runDecider: Decider<RunState, RunCommand, RunEvent> = {
  initialState: () => ({
    runId: '',
    status: 'pending',
    input: '',
    metadata: {},
    createdAt: '',
    deadlineAt: '',
    tasks: [],
  }),
  decide: (command, state) => {
    switch (command.type) {
      case 'StartRun':
        return startRun(command, state);
      case 'StartTask':
        return startTask(command, state);
      case 'CompleteTask':
      case 'FailTask':
        return endTask(command, state);
      case 'CompleteRun':
      case 'FailRun':
        return endRun(command, state);
      case 'CancelRun':
        return cancelRun(command, state);
      default: {
        const unknown: never = command;
        throw new ValidationError(`unknown command ${String((unknown as { type: unknown }).type)}`);
      }
    }
  },
  evolve,
};
