import type { EventData } from '@keel/core';
import type { TeamDefinition } from './tenant-config-events.js';

/** Category of run streams: `run-<runId>` (API.md "Teams and runs"). */
export const RUN_CATEGORY = 'run';

/** Tokens, cost and model calls of a task (the turn's usage events summed). */
export interface TaskUsage {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  modelCalls: number;
}

/** Why a task or a run failed: a stable word and a sentence. */
export interface RunFailure {
  /** `timeout`, `max_steps`, `task_failed`, or a failed turn's own code. */
  code: string;
  message: string;
}

/** A run of a team began; the team is copied in, so a later PUT or DELETE does not change it. */
export type RunStarted = EventData<
  'RunStarted',
  {
    runId: string;
    team: TeamDefinition;
    input: string;
    metadata: Record<string, string>;
    /** When the run times out (`at` + team.timeoutMs). */
    deadlineAt: string;
    at: string;
  }
>;

/**
 * A task began: slot `index` of the run's plan, a turn of `agentId`'s conversation
 * `conversationId` on `input` (the run's input and the earlier outputs it sees, cut).
 */
export type TaskStarted = EventData<
  'TaskStarted',
  {
    taskId: string;
    index: number;
    agentId: string;
    role: string;
    round: number;
    conversationId: string;
    input: string;
    at: string;
  }
>;

/** A task's turn completed with `output` (its last assistant message). */
export type TaskCompleted = EventData<
  'TaskCompleted',
  { taskId: string; output: string; usage: TaskUsage; at: string }
>;

/** A task's turn failed or was cancelled. */
export type TaskFailed = EventData<
  'TaskFailed',
  { taskId: string; error: RunFailure; usage: TaskUsage; at: string }
>;

/** The run completed with the aggregated output. */
export type RunCompleted = EventData<'RunCompleted', { output: string; at: string }>;

/** The run failed (a task failed, the time limit or the step limit was reached). */
export type RunFailed = EventData<'RunFailed', { error: RunFailure; at: string }>;

/** The run was cancelled; its running tasks' turns are cancelled too. */
export type RunCancelled = EventData<'RunCancelled', { runId: string; at: string }>;

/** Every event of a run stream. */
export type RunEvent =
  RunStarted | TaskStarted | TaskCompleted | TaskFailed | RunCompleted | RunFailed | RunCancelled;
