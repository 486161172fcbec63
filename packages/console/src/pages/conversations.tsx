// One tenant's conversations (GET /v1/conversations), its turns live (GET /v1/events) and its team
// runs (GET /v1/runs).
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { actingTenant, useSession } from '../api/session';
import type { ConversationSummary } from '../api/types';
import { formatTime } from '../components/format';
import { PageTitle } from '../components/layout';
import { LiveTurns } from '../components/live-turns';
import { RecentRuns } from '../components/recent-runs';
import { ErrorNote, Loading, StatusBadge } from '../components/status';
import { NeedsTenant } from '../components/tenant-picker';

/** The Conversations page (one tenant's). */
export const Conversations = () => {
  const session = useSession();
  const tenant = actingTenant(session);
  const list = useQuery({
    queryKey: ['conversations', session.key, session.tenantId],
    queryFn: () =>
      session
        .call<{ data: ConversationSummary[] }>('/v1/conversations?limit=50', { tenant })
        .then((b) => b.data),
    enabled: session.tenantId !== undefined,
    refetchInterval: 5000,
  });
  if (session.tenantId === undefined) {
    return (
      <>
        <PageTitle title="Conversations" />
        <NeedsTenant what="conversations" />
      </>
    );
  }
  return (
    <>
      <PageTitle title="Conversations" />
      <LiveTurns key={session.tenantId} feedPath="/v1/events" tenant={tenant} />
      <section className="card">
        <h2>Recent conversations</h2>
        {list.isPending && <Loading what="conversations" />}
        {list.isError && <ErrorNote error={list.error} />}
        {list.data && list.data.length === 0 && <p className="muted">No conversations yet.</p>}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Conversation</th>
                  <th>Agent</th>
                  <th>Status</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((conversation) => (
                  <tr key={conversation.id}>
                    <td>
                      <Link href={`/conversations/${encodeURIComponent(conversation.id)}`}>
                        {conversation.title || conversation.id}
                      </Link>
                    </td>
                    <td>{conversation.agentId}</td>
                    <td>
                      <StatusBadge status={conversation.status} />
                    </td>
                    <td>{formatTime(conversation.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <RecentRuns key={session.tenantId} tenant={tenant} />
    </>
  );
};
