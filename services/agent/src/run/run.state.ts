import type { RunFailure, TaskUsage, TeamDefinition } from '@keel/events';

/** Where a run is in its lifecycle (API.md). */
export type RunStatus = 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';

/** Where a task is. */
export type TaskStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** A task as the run knows it. */
export interface RunTaskState {
  taskId: string;
  index: number;
  agentId: string;
  role: string;
  round: number;
  conversationId: string;
  input: string;
  status: TaskStatus;
  startedAt: string;
  completedAt?: string;
  output?: string;
  error?: RunFailure;
  usage: TaskUsage;
}

/** A run rebuilt from its stream. */
export interface RunState {
  runId: string;
  status: RunStatus;
  team?: TeamDefinition;
  input: string;
  metadata: Record<string, string>;
  createdAt: string;
  deadlineAt: string;
  /** Tasks by plan index, in the order they started. */
  tasks: RunTaskState[];
  output?: string;
  error?: RunFailure;
  endedAt?: string;
}

/** No tokens, no cost, no calls. */
export const NO_USAGE: TaskUsage = { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };

/** Usage summed. */
export const addUsage = (a: TaskUsage, b: TaskUsage): TaskUsage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  costUsd: a.costUsd + b.costUsd,
  modelCalls: a.modelCalls + b.modelCalls,
});

/** The run's usage in all. */
export const runUsage = (state: RunState): TaskUsage =>
  state.tasks.reduce((sum, task) => addUsage(sum, task.usage), NO_USAGE);

/** The run's usage per member agent, ordered by agent id. */
export const usageByAgent = (state: RunState): Array<TaskUsage & { agentId: string }> => {
  const byAgent = new Map<string, TaskUsage>();
  for (const task of state.tasks)
    byAgent.set(task.agentId, addUsage(byAgent.get(task.agentId) ?? NO_USAGE, task.usage));
  return [...byAgent.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([agentId, usage]) => ({ agentId, ...usage }));
};

/** Whether the run has ended (nothing more may happen to it). */
export const hasEnded = (state: RunState): boolean =>
  state.status === 'completed' || state.status === 'failed' || state.status === 'cancelled';

/** The deterministic id of the task at plan slot `index` of `runId`. */
export const taskIdOf = (runId: string, index: number): string => `${runId}.${index}`;
