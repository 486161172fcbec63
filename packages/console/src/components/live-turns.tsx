// Turns running now, live: the turns a durable events feed (the operator's, every tenant; or one
// tenant's) shows, each with its latest state, newest first. A row opens the conversation.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useState } from 'react';
import { useLocation } from 'wouter';
import type { FeedStatus } from '../api/feed';
import { useFeed } from '../api/feed';
import { useSession } from '../api/session';
import type { FeedEvent, RunningTurn, TenantApproval } from '../api/types';
import { formatUsd, shortId } from './format';
import type { TurnRow } from './live-turn-rows';
import { MAX_ROWS, nextRow, seeded, seededTurns, text } from './live-turn-rows';
import { ErrorNote, StatusBadge } from './status';
import { useTenants } from './tenant-picker';

/**
 * The feed's turns, newest first, and its status, seeded with the turns running and waiting for
 * approval when the page opened; the counters' queries refresh as turns move.
 */
const useLiveTurns = (
  feedPath: string,
  tenant: string | undefined,
): { rows: TurnRow[]; status: FeedStatus } => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [rows, setRows] = useState<Map<string, TurnRow>>(new Map());
  const onEvent = useCallback(
    (event: FeedEvent) => {
      const conversationId = text(event.data.conversationId);
      if (!conversationId) return;
      setRows((current) => {
        const row = nextRow(current.get(conversationId), event);
        return row ? new Map(current).set(conversationId, row) : current;
      });
      if (event.event.startsWith('turn.') || event.event.startsWith('approval.')) {
        void queryClient.invalidateQueries({ queryKey: ['live-summary'] });
      }
    },
    [queryClient],
  );
  const status = useFeed(session, feedPath, tenant, onEvent);
  const scope = tenant === undefined ? '' : `&tenantId=${encodeURIComponent(tenant)}`;
  const seed = useQuery({
    queryKey: ['live-seed', session.key, tenant],
    queryFn: () =>
      Promise.all([
        session.call<{ data: TenantApproval[] }>(`/v1/approvals?status=pending${scope}`),
        session.call<{ data: RunningTurn[] }>(`/v1/turns?status=running${scope}`),
      ]),
    staleTime: 0,
    gcTime: 0,
  });
  useEffect(() => {
    if (!seed.data) return;
    const [waiting, running] = seed.data;
    setRows((current) => seededTurns(seeded(current, waiting.data), running.data));
  }, [seed.data]);
  return { rows: [...rows.values()].sort((a, b) => b.at - a.at).slice(0, MAX_ROWS), status };
};

const TurnsTable = ({ rows }: { rows: TurnRow[] }) => {
  const session = useSession();
  const tenants = useTenants();
  const [, navigate] = useLocation();
  const tenantName = (id: string | undefined) =>
    tenants.data?.find((tenant) => tenant.id === id)?.name ?? shortId(id ?? '—');
  const open = (row: TurnRow) => {
    if (session.isOperator && row.tenantId) session.chooseTenant(row.tenantId);
    navigate(`/conversations/${encodeURIComponent(row.conversationId)}`);
  };
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Conversation</th>
            {session.isOperator && <th>Tenant</th>}
            <th>Status</th>
            <th>Now</th>
            <th className="num">Cost</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.conversationId} className="clickable" onClick={() => open(row)}>
              <td>
                <a
                  href={`/console/conversations/${encodeURIComponent(row.conversationId)}`}
                  onClick={(event) => {
                    event.preventDefault();
                    event.stopPropagation();
                    open(row);
                  }}
                  title={row.conversationId}
                >
                  {row.conversationId}
                </a>
              </td>
              {session.isOperator && <td title={row.tenantId}>{tenantName(row.tenantId)}</td>}
              <td>
                <StatusBadge status={row.status} />
              </td>
              <td>{row.detail}</td>
              <td className="num">{formatUsd(row.costUsd)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};

/** The turns of a feed as they run, each opening its conversation. */
export const LiveTurns = ({ feedPath, tenant }: { feedPath: string; tenant?: string | undefined }) => {
  const { rows, status } = useLiveTurns(feedPath, tenant);
  const running = rows.filter((row) => row.status === 'running' || row.status === 'awaiting_approval');
  return (
    <section className="card live-turns" aria-label="Live turns">
      <div className="card-head">
        <h2>Turns, live</h2>
        <span className={`live-dot live-${status.state}`}>
          {status.state === 'live' ? `live · ${running.length} running` : status.state}
        </span>
      </div>
      {status.state === 'error' && <ErrorNote error={status.message} prefix="The events feed" />}
      {rows.length === 0 ? (
        <p className="muted">No turn is running: each appears here the moment it starts.</p>
      ) : (
        <TurnsTable rows={rows} />
      )}
    </section>
  );
};
