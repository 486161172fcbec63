import type { Run } from '@keel/proto/keel/run/v1/run';
import type { RunState } from './run.state.js';
import { runUsage, usageByAgent } from './run.state.js';

/** Characters of a task's output its summary shows. */
export const SUMMARY_CHARS = 500;

/** The message of a run rebuilt from its log. */
export const runMessage = (state: RunState & { version?: number }): Run => ({
  id: state.runId,
  teamId: state.team?.teamId ?? '',
  status: state.status,
  input: state.input,
  output: state.output ?? '',
  ...(state.error ? { error: state.error } : {}),
  tasks: state.tasks.map((t) => ({
    id: t.taskId,
    agentId: t.agentId,
    role: t.role,
    round: t.round,
    status: t.status,
    conversationId: t.conversationId,
    startedAt: t.startedAt,
    completedAt: t.completedAt ?? '',
    summary: (t.output ?? t.error?.message ?? '').slice(0, SUMMARY_CHARS),
  })),
  usage: { ...runUsage(state), agentId: '' },
  usageByAgent: usageByAgent(state),
  createdAt: state.createdAt,
  metadata: state.metadata,
  version: state.version ?? 0,
});
