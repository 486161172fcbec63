import { NotFoundError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import type { AgentDefinition, TeamDefinition, TenantConfigEvent } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { tenantConfigDecider } from '../tenant-config/tenant-config.decider.js';
import { fold } from '@keel/core';

const at = '2026-11-24T03:00:00.000Z';
const spec = DeciderSpec.for(tenantConfigDecider);
const agentOf = (agentId: string): AgentDefinition => ({
  agentId,
  model: 'demo:echo',
  instructions: '',
  tools: [],
  maxSteps: 8,
  temperature: 0,
  toolResultMaxChars: 8_000,
});
const agents: TenantConfigEvent[] = ['researcher', 'writer', 'critic', 'lead'].map((id) => ({
  type: 'AgentConfigured',
  data: { agent: agentOf(id), at },
}));
const team: TeamDefinition = {
  teamId: 'blog',
  topology: 'pipeline',
  members: [
    { agentId: 'researcher', role: 'Researcher', position: 1 },
    { agentId: 'writer', role: 'Writer', position: 2 },
  ],
  aggregation: 'last',
  timeoutMs: 1_800_000,
  maxSteps: 50,
  contextCharLimit: 8_000,
};

/** The field a PutTeam of `team` with `over` is refused for, after the tenant's agents exist. */
const refusedField = (over: Partial<TeamDefinition>): string | undefined => {
  const state = fold(tenantConfigDecider, agents);
  try {
    tenantConfigDecider.decide({ type: 'PutTeam', team: { ...team, ...over }, at }, state);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  return undefined;
};

describe('teams as tenant configuration', () => {
  it('stores a team of known agents and replaces it on a second PUT', () => {
    spec
      .given(agents)
      .when({ type: 'PutTeam', team, at })
      .then([{ type: 'TeamConfigured', data: { team, at } }]);
    const debate: TeamDefinition = { ...team, topology: 'debate', rounds: 2, aggregation: 'vote' };
    spec
      .given([...agents, { type: 'TeamConfigured', data: { team, at } }])
      .when({ type: 'PutTeam', team: debate, at })
      .thenState({
        ...fold(tenantConfigDecider, agents),
        teams: { blog: debate },
      });
  });

  it('refuses an unknown agent, a duplicate position, naming the member', () => {
    const ghost = [team.members[0]!, { agentId: 'ghost', role: 'Ghost', position: 2 }];
    expect(refusedField({ members: ghost })).toBe('members[1].agentId');
    const twice = [team.members[0]!, { ...team.members[1]!, position: 1 }];
    expect(refusedField({ members: twice })).toBe('members[1].position');
    expect(refusedField({ members: [] })).toBe('members');
    expect(refusedField({ members: [{ ...team.members[0]!, role: ' ' }] })).toBe('members[0].role');
  });

  it('refuses a manager among the members, a missing or unknown manager, a manager off hierarchical', () => {
    const hierarchical = { topology: 'hierarchical' as const };
    expect(refusedField({ ...hierarchical, manager: 'writer' })).toBe('manager');
    expect(refusedField({ ...hierarchical })).toBe('manager');
    expect(refusedField({ ...hierarchical, manager: 'nobody' })).toBe('manager');
    expect(refusedField({ manager: 'lead' })).toBe('manager');
    expect(refusedField({ ...hierarchical, manager: 'lead' })).toBeUndefined();
  });

  it('refuses debate and round_robin without rounds, and rounds where they do not apply', () => {
    expect(refusedField({ topology: 'debate' })).toBe('rounds');
    expect(refusedField({ topology: 'round_robin' })).toBe('rounds');
    expect(refusedField({ topology: 'round_robin', rounds: 0 })).toBe('rounds');
    expect(refusedField({ topology: 'parallel', rounds: 2 })).toBe('rounds');
    expect(refusedField({ topology: 'round_robin', rounds: 3 })).toBeUndefined();
  });

  it('refuses bad words and numbers naming the field', () => {
    expect(refusedField({ teamId: 'no spaces' })).toBe('teamId');
    expect(refusedField({ topology: 'star' as never })).toBe('topology');
    expect(refusedField({ aggregation: 'sum' as never })).toBe('aggregation');
    expect(refusedField({ timeoutMs: 10 })).toBe('timeoutMs');
    expect(refusedField({ maxSteps: 0 })).toBe('maxSteps');
    expect(refusedField({ contextCharLimit: -1 })).toBe('contextCharLimit');
  });

  it('deletes a team; deleting an unknown team is not found', () => {
    const configured: TenantConfigEvent = { type: 'TeamConfigured', data: { team, at } };
    spec
      .given([...agents, configured])
      .when({ type: 'DeleteTeam', teamId: 'blog', at })
      .then([{ type: 'TeamDeleted', data: { teamId: 'blog', at } }]);
    spec
      .given([...agents, configured, { type: 'TeamDeleted', data: { teamId: 'blog', at } }])
      .when({ type: 'DeleteTeam', teamId: 'blog', at })
      .thenThrows(NotFoundError);
  });
});
