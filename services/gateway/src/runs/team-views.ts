import type { Team } from '@keel/proto/keel/run/v1/run';

/** A team as API.md shows it. */
export interface TeamView {
  id: string;
  topology: string;
  members: Array<{ agentId: string; role: string; position: number }>;
  aggregation: string;
  manager?: string;
  rounds?: number;
  timeoutMs: number;
  maxSteps: number;
  contextCharLimit: number;
}

/** The JSON of a stored team: `manager` and `rounds` only where the topology has them. */
export const teamView = (team: Team): TeamView => ({
  id: team.teamId,
  topology: team.topology,
  members: team.members.map(({ agentId, role, position }) => ({ agentId, role, position })),
  aggregation: team.aggregation,
  ...(team.manager ? { manager: team.manager } : {}),
  ...(team.rounds ? { rounds: team.rounds } : {}),
  timeoutMs: team.timeoutMs,
  maxSteps: team.maxSteps,
  contextCharLimit: team.contextCharLimit ?? 0,
});
