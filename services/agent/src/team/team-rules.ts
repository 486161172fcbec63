import { NotFoundError, ValidationError, hasOwnKey } from '@keel/core';
import type { AgentDefinition, TeamDefinition, TenantConfigEvent } from '@keel/events';
import { TEAM_AGGREGATIONS, TEAM_TOPOLOGIES } from '@keel/events';

/** Ids of teams: the same alphabet as agents'. */
const TEAM_ID = /^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$/;
/** Most members of a team. */
export const MAX_TEAM_MEMBERS = 32;
/** Most teams one tenant may define. */
export const MAX_TEAMS_PER_TENANT = 200;
/** Ranges of a team's numbers (API.md's example values are the defaults). */
export const TEAM_LIMITS = {
  rounds: { min: 1, max: 20 },
  timeoutMs: { default: 1_800_000, min: 1_000, max: 86_400_000 },
  maxSteps: { default: 50, min: 1, max: 1_000 },
  contextCharLimit: { default: 8_000, min: 0, max: 200_000 },
} as const;

/** Topologies that repeat and need `rounds`. */
const ROUNDED: readonly string[] = ['debate', 'round_robin'];

const fail = (field: string, message: string): never => {
  throw new ValidationError(message, { field });
};

const checkIntegerIn = (value: unknown, field: string, range: { min: number; max: number }): void => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max) {
    fail(field, `${field} must be an integer from ${range.min} to ${range.max}`);
  }
};

/** Each member names a known agent and a role, at a position no other member has. */
const checkMembers = (team: TeamDefinition, agents: Record<string, AgentDefinition>): void => {
  if (!Array.isArray(team.members) || team.members.length === 0 || team.members.length > MAX_TEAM_MEMBERS) {
    fail('members', `members must be a list of 1 to ${MAX_TEAM_MEMBERS} members`);
  }
  const positions = new Set<number>();
  team.members.forEach((member, i) => {
    const at = `members[${i}]`;
    if (typeof member.agentId !== 'string' || !hasOwnKey(agents, member.agentId)) {
      fail(`${at}.agentId`, `${at}.agentId: unknown agent "${String(member.agentId).slice(0, 64)}"`);
    }
    if (typeof member.role !== 'string' || member.role.trim() === '' || member.role.length > 200) {
      fail(`${at}.role`, `${at}.role must be 1 to 200 characters`);
    }
    checkIntegerIn(member.position, `${at}.position`, { min: 0, max: 1_000_000 });
    if (positions.has(member.position))
      fail(`${at}.position`, `${at}.position ${member.position} is taken twice`);
    positions.add(member.position);
  });
};

/** hierarchical needs a known manager outside the members; no other topology takes one. */
const checkManager = (team: TeamDefinition, agents: Record<string, AgentDefinition>): void => {
  if (team.topology !== 'hierarchical') {
    if (team.manager !== undefined) fail('manager', 'manager applies to the hierarchical topology only');
    return;
  }
  if (typeof team.manager !== 'string' || team.manager === '') {
    return fail('manager', 'manager is required by the hierarchical topology');
  }
  if (!hasOwnKey(agents, team.manager))
    fail('manager', `manager: unknown agent "${team.manager.slice(0, 64)}"`);
  if (team.members.some((m) => m.agentId === team.manager)) {
    fail('manager', 'manager must not be among the members');
  }
};

const checkRounds = (team: TeamDefinition): void => {
  if (!ROUNDED.includes(team.topology)) {
    if (team.rounds !== undefined) fail('rounds', 'rounds applies to debate and round_robin only');
    return;
  }
  if (team.rounds === undefined) fail('rounds', `rounds is required by the ${team.topology} topology`);
  checkIntegerIn(team.rounds, 'rounds', TEAM_LIMITS.rounds);
};

/** A team definition's meaning against the tenant's agents; refused naming the first bad field. */
export const checkTeam = (team: TeamDefinition, agents: Record<string, AgentDefinition>): void => {
  if (typeof team.teamId !== 'string' || !TEAM_ID.test(team.teamId)) {
    fail('teamId', 'teamId must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$');
  }
  if (!(TEAM_TOPOLOGIES as readonly string[]).includes(team.topology)) {
    fail('topology', `topology must be one of ${TEAM_TOPOLOGIES.join(', ')}`);
  }
  if (!(TEAM_AGGREGATIONS as readonly string[]).includes(team.aggregation)) {
    fail('aggregation', `aggregation must be one of ${TEAM_AGGREGATIONS.join(', ')}`);
  }
  checkMembers(team, agents);
  checkManager(team, agents);
  checkRounds(team);
  checkIntegerIn(team.timeoutMs, 'timeoutMs', TEAM_LIMITS.timeoutMs);
  checkIntegerIn(team.maxSteps, 'maxSteps', TEAM_LIMITS.maxSteps);
  checkIntegerIn(team.contextCharLimit, 'contextCharLimit', TEAM_LIMITS.contextCharLimit);
};

/** The decision of `PutTeam`: the team checked, within the tenant's room for teams. */
export const decidePutTeam = (
  team: TeamDefinition,
  state: { agents: Record<string, AgentDefinition>; teams: Record<string, TeamDefinition> },
  at: string,
): TenantConfigEvent[] => {
  checkTeam(team, state.agents);
  if (!hasOwnKey(state.teams, team.teamId) && Object.keys(state.teams).length >= MAX_TEAMS_PER_TENANT) {
    fail('teamId', `a tenant may define at most ${MAX_TEAMS_PER_TENANT} teams`);
  }
  return [{ type: 'TeamConfigured', data: { team, at } }];
};

/** The decision of `DeleteTeam`: an unknown team is not found. */
export const decideDeleteTeam = (
  teamId: string,
  teams: Record<string, TeamDefinition>,
  at: string,
): TenantConfigEvent[] => {
  if (!hasOwnKey(teams, teamId)) throw new NotFoundError(`team ${teamId} not found`);
  return [{ type: 'TeamDeleted', data: { teamId, at } }];
};
