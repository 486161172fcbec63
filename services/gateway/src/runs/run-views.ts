import type { Run, RunUsage } from '@keel/proto/keel/run/v1/run';

/** A run's or a member agent's usage as API.md shows it. */
export interface RunUsageView {
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  modelCalls: number;
}

/** A run as API.md shows it (`GET /v1/runs/{id}`). */
export interface RunView {
  id: string;
  teamId: string;
  status: string;
  input: string;
  output: string | null;
  error?: { code: string; message: string };
  tasks: Array<{
    id: string;
    agentId: string;
    role: string;
    round: number;
    status: string;
    conversationId: string;
    startedAt: string;
    completedAt: string | null;
    summary: string;
  }>;
  usage: RunUsageView & { byAgent: Array<RunUsageView & { agentId: string }> };
  metadata: Record<string, string>;
  createdAt: string;
}

const usageView = (usage: RunUsage | undefined): RunUsageView => ({
  promptTokens: usage?.promptTokens ?? 0,
  completionTokens: usage?.completionTokens ?? 0,
  costUsd: usage?.costUsd ?? 0,
  modelCalls: usage?.modelCalls ?? 0,
});

/** The JSON of a run: `output` null until it completed, `error` only when it failed. */
export const runView = (run: Run): RunView => ({
  id: run.id,
  teamId: run.teamId,
  status: run.status,
  input: run.input,
  output: run.status === 'completed' ? run.output : null,
  ...(run.error ? { error: { code: run.error.code, message: run.error.message } } : {}),
  tasks: run.tasks.map((t) => ({
    id: t.id,
    agentId: t.agentId,
    role: t.role,
    round: t.round,
    status: t.status,
    conversationId: t.conversationId,
    startedAt: t.startedAt,
    completedAt: t.completedAt || null,
    summary: t.summary,
  })),
  usage: {
    ...usageView(run.usage),
    byAgent: run.usageByAgent.map((u) => ({ agentId: u.agentId, ...usageView(u) })),
  },
  metadata: run.metadata,
  createdAt: run.createdAt,
});
