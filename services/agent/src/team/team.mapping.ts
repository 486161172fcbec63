import type { TeamAggregation, TeamDefinition, TeamTopology } from '@keel/events';
import type { Team } from '@keel/proto/keel/run/v1/run';
import { TEAM_LIMITS } from './team-rules.js';

/**
 * The TeamDefinition of a PutTeam's message: proto defaults (0, '') read as "not given" and get
 * the team's defaults; the words and ranges are the decider's to judge.
 */
export const teamDefinitionOf = (team: Team): TeamDefinition => ({
  teamId: team.teamId,
  topology: team.topology as TeamTopology,
  members: team.members.map(({ agentId, role, position }) => ({ agentId, role, position })),
  aggregation: (team.aggregation || 'last') as TeamAggregation,
  ...(team.manager ? { manager: team.manager } : {}),
  ...(team.rounds ? { rounds: team.rounds } : {}),
  timeoutMs: team.timeoutMs || TEAM_LIMITS.timeoutMs.default,
  maxSteps: team.maxSteps || TEAM_LIMITS.maxSteps.default,
  contextCharLimit: team.contextCharLimit ?? TEAM_LIMITS.contextCharLimit.default,
});

/** The message of a stored team. */
export const teamMessage = (team: TeamDefinition): Team => ({
  teamId: team.teamId,
  topology: team.topology,
  members: team.members.map(({ agentId, role, position }) => ({ agentId, role, position })),
  aggregation: team.aggregation,
  manager: team.manager ?? '',
  rounds: team.rounds ?? 0,
  timeoutMs: team.timeoutMs,
  maxSteps: team.maxSteps,
  contextCharLimit: team.contextCharLimit,
});
