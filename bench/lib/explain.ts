/** How the server runs a stream read, from its explain output (FerretDB's or MongoDB's). */
export const describePlan = (explain: Record<string, unknown>): string => {
  if ('filterPushdown' in explain) {
    const planner = explain.queryPlanner as { Plan?: string[] } | undefined;
    return (
      `FerretDB explain: filterPushdown ${String(explain.filterPushdown)}, sortPushdown ${String(explain.sortPushdown)}, ` +
      `SQLite plan "${(planner?.Plan ?? []).map((p) => p.replace(/^.*detail=/, '')).join('; ')}"`
    );
  }
  const stages: string[] = [];
  let stage = (explain.queryPlanner as { winningPlan?: Record<string, unknown> } | undefined)?.winningPlan;
  while (stage) {
    stages.push(`${String(stage.stage)}${stage.indexName ? `(${String(stage.indexName)})` : ''}`);
    stage = stage.inputStage as Record<string, unknown> | undefined;
  }
  return `MongoDB winning plan ${stages.join(' ← ') || 'unknown'}`;
};
