import type { TeamDefinition, TeamMember } from '@keel/events';

/**
 * One task a run's plan holds: which agent answers, in which round, after which slots, seeing
 * whose outputs. A plan is a pure function of the team, so every replay makes the same one.
 */
export interface PlanSlot {
  index: number;
  agentId: string;
  role: string;
  /** The member's position; the manager's is -1 (it is no member). */
  position: number;
  round: number;
  /** Slots that must have completed before this one starts. */
  after: number[];
  /** Slots whose outputs this one is given as context. */
  sees: number[];
  /** The hierarchical manager's turn: it is told the members and has them as sub-agent tools. */
  delegates?: boolean;
}

/** The members in `position` order. */
const ordered = (team: TeamDefinition): TeamMember[] =>
  [...team.members].sort((a, b) => a.position - b.position);

const range = (from: number, to: number): number[] =>
  Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);

const slotOf = (
  member: TeamMember,
  index: number,
  round: number,
  after: number[],
  sees: number[],
): PlanSlot => ({
  index,
  agentId: member.agentId,
  role: member.role,
  position: member.position,
  round,
  after,
  sees,
});

/** pipeline: each member after the previous one, seeing every earlier output. */
const pipeline = (members: TeamMember[]): PlanSlot[] =>
  members.map((m, i) => slotOf(m, i, 1, i === 0 ? [] : [i - 1], range(0, i)));

/** parallel: every member at once on the input alone. */
const parallel = (members: TeamMember[]): PlanSlot[] => members.map((m, i) => slotOf(m, i, 1, [], []));

/** debate: `rounds` rounds; in each, every member answers seeing the others' answers of the round before. */
const debate = (members: TeamMember[], rounds: number): PlanSlot[] =>
  range(0, rounds).flatMap((r) =>
    members.map((m, j) => {
      const previous = range(0, members.length).map((k) => (r - 1) * members.length + k);
      const after = r === 0 ? [] : previous;
      const sees = r === 0 ? [] : previous.filter((_, k) => k !== j);
      return slotOf(m, r * members.length + j, r + 1, after, sees);
    }),
  );

/** round_robin: the members in order, `rounds` times, each seeing every earlier output. */
const roundRobin = (members: TeamMember[], rounds: number): PlanSlot[] =>
  range(0, rounds * members.length).map((s) =>
    slotOf(
      members[s % members.length]!,
      s,
      Math.floor(s / members.length) + 1,
      s === 0 ? [] : [s - 1],
      range(0, s),
    ),
  );

/**
 * hierarchical: the manager's turn, delegating (API.md): one task, in which the manager has the
 * members as sub-agent tools `agent__<id>` and calls them as it decides (each call a child
 * conversation of its conversation, not a task of the run); its answer is the run's.
 */
const hierarchical = (manager: string): PlanSlot[] => [
  { ...slotOf({ agentId: manager, role: 'Manager', position: -1 }, 0, 1, [], []), delegates: true },
];

/** The run's tasks, in plan order, for the team's topology. */
export const planOf = (team: TeamDefinition): PlanSlot[] => {
  const members = ordered(team);
  switch (team.topology) {
    case 'pipeline':
      return pipeline(members);
    case 'parallel':
      return parallel(members);
    case 'debate':
      return debate(members, team.rounds ?? 1);
    case 'round_robin':
      return roundRobin(members, team.rounds ?? 1);
    case 'hierarchical':
      return hierarchical(team.manager ?? '');
  }
};

/** An earlier output a task is given. */
export interface SeenOutput {
  index: number;
  role: string;
  round: number;
  output: string;
}

/**
 * The earlier outputs as one text, newest (highest plan index) first, cut to `limit` characters
 * in all: what falls past the limit (the oldest) is left out.
 */
export const contextOf = (seen: readonly SeenOutput[], limit: number): string =>
  [...seen]
    .sort((a, b) => b.index - a.index)
    .map((s) => `[${s.role}, round ${s.round}]\n${s.output}`)
    .join('\n\n')
    .slice(0, limit);

/** What a task's turn is sent: the run's input, the manager's brief, and the earlier outputs it sees. */
export const taskInputOf = (
  team: TeamDefinition,
  slot: PlanSlot,
  input: string,
  seen: readonly SeenOutput[],
): string => {
  const parts = [input];
  if (slot.delegates) {
    const roster = ordered(team).map((m) => `- ${m.role} (${m.agentId}): the tool agent__${m.agentId}`);
    parts.push(
      `Your team, to whom you delegate with their tools (a task each, as you decide), then answer:\n${roster.join('\n')}`,
    );
  }
  const context = contextOf(seen, team.contextCharLimit);
  if (context !== '') parts.push(`Earlier outputs, newest first:\n\n${context}`);
  return parts.join('\n\n');
};
