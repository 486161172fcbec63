import type { TeamAggregation } from '@keel/events';
import type { PlanSlot } from './run-plan.js';

/** A completed slot and its output. */
export interface SlotOutput {
  slot: PlanSlot;
  output: string;
}

/** Each participant's final output (its slot of highest index), in the order of those slots. */
const finals = (outputs: readonly SlotOutput[]): SlotOutput[] => {
  const last = new Map<string, SlotOutput>();
  for (const done of [...outputs].sort((a, b) => a.slot.index - b.slot.index))
    last.set(done.slot.agentId, done);
  return [...last.values()].sort((a, b) => a.slot.index - b.slot.index);
};

/** vote: the final answer most members gave (trimmed, case-insensitive); a tie goes to the lowest position. */
const vote = (outputs: readonly SlotOutput[]): string => {
  const ballots = finals(outputs).filter((o) => o.slot.position >= 0);
  const tally = new Map<string, { count: number; lowest: SlotOutput }>();
  for (const ballot of ballots) {
    const key = ballot.output.trim().toLowerCase();
    const seen = tally.get(key);
    if (!seen) tally.set(key, { count: 1, lowest: ballot });
    else
      tally.set(key, {
        count: seen.count + 1,
        lowest: ballot.slot.position < seen.lowest.slot.position ? ballot : seen.lowest,
      });
  }
  const winner = [...tally.values()].sort(
    (a, b) => b.count - a.count || a.lowest.slot.position - b.lowest.slot.position,
  )[0];
  return winner?.lowest.output.trim() ?? '';
};

/** The run's output from its completed slots (API.md "Aggregation"). */
export const aggregate = (aggregation: TeamAggregation, outputs: readonly SlotOutput[]): string => {
  switch (aggregation) {
    case 'last':
      return [...outputs].sort((a, b) => b.slot.index - a.slot.index)[0]?.output ?? '';
    case 'merge':
      return finals(outputs)
        .map((o) => `## ${o.slot.role}\n\n${o.output.trim()}`)
        .join('\n\n');
    case 'vote':
      return vote(outputs);
  }
};
