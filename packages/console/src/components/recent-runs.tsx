// One tenant's team runs (GET /v1/runs, newest first): status, tasks with their conversations,
// cost and output; a task's conversation opens its timeline.
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { useSession } from '../api/session';
import type { RunSummary } from '../api/types';
import { formatTime, formatUsd, shortId } from './format';
import { ErrorNote, Loading, StatusBadge } from './status';

const RunTasks = ({ run }: { run: RunSummary }) => (
  <ul className="run-tasks">
    {run.tasks.map((task) => (
      <li key={task.id}>
        <StatusBadge status={task.status} /> {task.role || task.agentId}
        {task.conversationId && (
          <>
            {' · '}
            <Link
              href={`/conversations/${encodeURIComponent(task.conversationId)}`}
              title={task.conversationId}
            >
              {shortId(task.conversationId)}
            </Link>
          </>
        )}
      </li>
    ))}
  </ul>
);

/** The Runs card of a tenant (`tenant`: the operator's acting tenant, else the key's own). */
export const RecentRuns = ({ tenant }: { tenant: string | undefined }) => {
  const session = useSession();
  const runs = useQuery({
    queryKey: ['runs', session.key, session.tenantId],
    queryFn: () => session.call<{ data: RunSummary[] }>('/v1/runs', { tenant }).then((body) => body.data),
    refetchInterval: 5000,
  });
  return (
    <section className="card" aria-label="Runs">
      <h2>Team runs</h2>
      {runs.isPending && <Loading what="runs" />}
      {runs.isError && <ErrorNote error={runs.error} prefix="Runs" />}
      {runs.data && runs.data.length === 0 && <p className="muted">No team runs yet.</p>}
      {runs.data && runs.data.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Runs">
            <thead>
              <tr>
                <th>Run</th>
                <th>Team</th>
                <th>Status</th>
                <th>Tasks</th>
                <th className="num">Cost</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {runs.data.map((run) => (
                <tr key={run.id}>
                  <td title={run.output ?? run.error?.message ?? run.input}>{run.id}</td>
                  <td>{run.teamId}</td>
                  <td>
                    <StatusBadge status={run.status} />
                  </td>
                  <td>
                    <RunTasks run={run} />
                  </td>
                  <td className="num">{formatUsd(run.usage.costUsd)}</td>
                  <td>{formatTime(run.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
};
