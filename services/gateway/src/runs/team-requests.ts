// The body of `PUT /v1/teams/{teamId}` (API.md "Teams and runs"), checked for shape and types
// here; the agent service checks the meaning (known agents, positions, manager, rounds, ranges).
import type { Team, TeamMember } from '@keel/proto/keel/run/v1/run';
import {
  MAX_LIST_ITEMS,
  fail,
  objectWith,
  optionalIntegerIn,
  optionalString,
} from '../config/request-fields.js';

const FIELDS = [
  'topology',
  'members',
  'aggregation',
  'manager',
  'rounds',
  'timeoutMs',
  'maxSteps',
  'contextCharLimit',
] as const;

/** Largest number a team field may carry over the wire (uint32). */
const UINT32_MAX = 4_294_967_295;

const member = (value: unknown, i: number): TeamMember => {
  const field = `members[${i}]`;
  const object = objectWith(value, ['agentId', 'role', 'position'], field);
  const position = optionalIntegerIn(object.position, `${field}.position`, 0, UINT32_MAX);
  if (position === undefined) fail(`${field}.position`, `${field}.position is required`);
  return {
    agentId: optionalString(object.agentId, `${field}.agentId`, 200) ?? '',
    role: optionalString(object.role, `${field}.role`, 200) ?? '',
    position: position ?? 0,
  };
};

const members = (value: unknown): TeamMember[] => {
  if (!Array.isArray(value)) return fail('members', 'members must be a list of members');
  if (value.length > MAX_LIST_ITEMS)
    return fail('members', `members must have at most ${MAX_LIST_ITEMS} items`);
  return value.map(member);
};

/** Checks `PUT /v1/teams/{teamId}`'s body and maps it to the team message. */
export const parsePutTeam = (teamId: string, body: unknown): Team => {
  const object = objectWith(body, FIELDS);
  const contextCharLimit = optionalIntegerIn(object.contextCharLimit, 'contextCharLimit', 0, UINT32_MAX);
  return {
    teamId,
    topology: optionalString(object.topology, 'topology', 100) ?? '',
    members: members(object.members),
    aggregation: optionalString(object.aggregation, 'aggregation', 100) ?? '',
    manager: optionalString(object.manager, 'manager', 200) ?? '',
    rounds: optionalIntegerIn(object.rounds, 'rounds', 1, UINT32_MAX) ?? 0,
    timeoutMs: optionalIntegerIn(object.timeoutMs, 'timeoutMs', 1, UINT32_MAX) ?? 0,
    maxSteps: optionalIntegerIn(object.maxSteps, 'maxSteps', 1, UINT32_MAX) ?? 0,
    ...(contextCharLimit !== undefined ? { contextCharLimit } : {}),
  };
};
