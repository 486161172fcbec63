import type { RecordedEvent } from '@keel/core';
import type { RunEvent } from '@keel/events';

type Durable = { [T in RunEvent['type']]: Extract<RunEvent, { type: T }> };

/** Each run event's frame name and data (API.md "Teams and runs": the run's stream). */
const RUN_FRAMES: { [T in RunEvent['type']]: (data: Durable[T]['data']) => [string, unknown] } = {
  RunStarted: (d) => ['run.started', { runId: d.runId, teamId: d.team.teamId, input: d.input }],
  TaskStarted: (d) => [
    'task.started',
    { taskId: d.taskId, agentId: d.agentId, role: d.role, round: d.round, conversationId: d.conversationId },
  ],
  TaskCompleted: (d) => ['task.completed', { taskId: d.taskId, output: d.output, usage: d.usage }],
  TaskFailed: (d) => ['task.failed', { taskId: d.taskId, error: d.error }],
  RunCompleted: (d) => ['run.completed', { output: d.output }],
  RunFailed: (d) => ['run.failed', { error: d.error }],
  RunCancelled: () => ['run.cancelled', {}],
};

/** The frame of a durable run event, id = its version; undefined for any other event. */
export const runFrame = (event: RecordedEvent): { id: string; event: string; data: unknown } | undefined => {
  if (!Object.hasOwn(RUN_FRAMES, event.type)) return undefined;
  const map = RUN_FRAMES[event.type as RunEvent['type']] as (data: unknown) => [string, unknown];
  const [name, data] = map(event.data);
  return { id: String(event.version), event: name, data };
};
