/** How the server runs a stream read, from its explain output (FerretDB's or MongoDB's). */
export const describePlan = (explain: Record<string, unknown>): string => {
  if ('filterPushdown' in explain) {
    const planner = explain.queryPlanner as { Plan?: unknown } | undefined;
    const pushdown = `filterPushdown ${String(explain.filterPushdown)}, sortPushdown ${String(explain.sortPushdown)}`;
    // SQLite's plan is a list of "… detail=…" lines; PostgreSQL's is its EXPLAIN JSON tree.
    if (Array.isArray(planner?.Plan)) {
      const lines = (planner.Plan as string[]).map((p) => p.replace(/^.*detail=/, '')).join('; ');
      return `FerretDB explain: ${pushdown}, SQLite plan "${lines}"`;
    }
    return `FerretDB explain: ${pushdown}, PostgreSQL plan "${postgresNodes(planner?.Plan).join(' ← ')}"`;
  }
  const stages: string[] = [];
  let stage = (explain.queryPlanner as { winningPlan?: Record<string, unknown> } | undefined)?.winningPlan;
  while (stage) {
    stages.push(`${String(stage.stage)}${stage.indexName ? `(${String(stage.indexName)})` : ''}`);
    stage = stage.inputStage as Record<string, unknown> | undefined;
  }
  return `MongoDB winning plan ${stages.join(' ← ') || 'unknown'}`;
};

/** "Sort", "Index Scan (commits_…_idx)", …: the nodes of a PostgreSQL EXPLAIN JSON plan, outermost first. */
const postgresNodes = (plan: unknown): string[] => {
  const node = (Array.isArray(plan) ? plan[0] : plan) as Record<string, unknown> | undefined;
  if (!node || typeof node !== 'object') return [];
  const inner = (node.Plan ?? node) as Record<string, unknown>;
  const type = inner['Node Type'];
  if (typeof type !== 'string') return [];
  const index = typeof inner['Index Name'] === 'string' ? ` (${inner['Index Name']})` : '';
  const children = (inner.Plans as unknown[] | undefined) ?? [];
  return [`${type}${index}`, ...children.flatMap((child) => postgresNodes(child))];
};
