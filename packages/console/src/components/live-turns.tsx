// Turns running now, live: the turns a durable events feed (the operator's, every tenant; or one
// tenant's) shows, each with its latest state, newest first. A row opens the conversation.
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useState } from 'react';
import { useLocation } from 'wouter';
import { useFeed } from '../api/feed';
import { useSession } from '../api/session';
import type { FeedEvent } from '../api/types';
import type { TurnRow } from './live-turn-rows';
import { MAX_ROWS, nextRow, text } from './live-turn-rows';
import { formatUsd, shortId } from './format';
import { ErrorNote, StatusBadge } from './status';
import { useTenants } from './tenant-picker';

/** The turns of a feed as they run, each opening its conversation. */
export const LiveTurns = ({ feedPath, tenant }: { feedPath: string; tenant?: string | undefined }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const [rows, setRows] = useState<Map<string, TurnRow>>(new Map());
  const tenants = useTenants();
  const tenantName = (id: string | undefined) =>
    tenants.data?.find((tenant) => tenant.id === id)?.name ?? shortId(id ?? '—');

  const onEvent = useCallback(
    (event: FeedEvent) => {
      const turnId = text(event.data.turnId);
      if (!turnId) return;
      setRows((current) => {
        const row = nextRow(current.get(turnId), event);
        if (!row) return current;
        const next = new Map(current);
        next.set(turnId, row);
        return next;
      });
      if (event.event.startsWith('turn.') || event.event.startsWith('approval.')) {
        void queryClient.invalidateQueries({ queryKey: ['live-summary'] });
      }
    },
    [queryClient],
  );
  const status = useFeed(session, feedPath, tenant, onEvent);

  const shown = [...rows.values()].sort((a, b) => b.at - a.at).slice(0, MAX_ROWS);
  const open = (row: TurnRow) => {
    if (session.isOperator && row.tenantId) session.chooseTenant(row.tenantId);
    navigate(`/conversations/${encodeURIComponent(row.conversationId)}`);
  };
  const running = shown.filter((row) => row.status === 'running' || row.status === 'awaiting_approval');

  return (
    <section className="card live-turns" aria-label="Live turns">
      <div className="card-head">
        <h2>Turns, live</h2>
        <span className={`live-dot live-${status.state}`}>
          {status.state === 'live' ? `live · ${running.length} running` : status.state}
        </span>
      </div>
      {status.state === 'error' && <ErrorNote error={status.message} prefix="The events feed" />}
      {shown.length === 0 ? (
        <p className="muted">
          No turn has started since this page opened: each appears here the moment it starts.
        </p>
      ) : (
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
              {shown.map((row) => (
                <tr key={row.turnId} className="clickable" onClick={() => open(row)}>
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
      )}
    </section>
  );
};
