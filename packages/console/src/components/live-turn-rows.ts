// The live list's state, pure: one row per conversation with activity, showing its latest turn,
// after each event of a durable events feed (the operator's or a tenant's). Rows are keyed by
// conversation, not turn: every frame of the feeds names its conversation, while some events
// (`approval.decided`) name no turn. A conversation runs one turn at a time; `turn.started`
// starts its row afresh. The turns running and the approvals pending when the page opened seed
// rows (the feeds start at the head of the log); an event always wins over a seed, and an
// approval's seed over its turn's.
import type { FeedEvent, RunningTurn, TenantApproval } from '../api/types';

/** A conversation's latest turn as the live list shows it. */
export interface TurnRow {
  conversationId: string;
  tenantId: string | undefined;
  status: string;
  detail: string;
  costUsd: number;
  at: number;
}

/** The live list shows the latest this many turns. */
export const MAX_ROWS = 25;

/** A string field of an event's data, or undefined. */
export const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

const started = (conversationId: string, tenantId: string | undefined, now: number): TurnRow => ({
  conversationId,
  tenantId,
  status: 'running',
  detail: 'started',
  costUsd: 0,
  at: now,
});

/** The conversation's row after one more event at `now` (undefined: the event names no conversation). */
export const nextRow = (
  row: TurnRow | undefined,
  event: FeedEvent,
  now = Date.now(),
): TurnRow | undefined => {
  const { data } = event;
  const conversationId = text(data.conversationId) ?? row?.conversationId;
  if (!conversationId) return row;
  const tenantId = text(data.tenantId) ?? row?.tenantId;
  if (event.event === 'turn.started') return started(conversationId, tenantId, now);
  const updated = { ...(row ?? started(conversationId, tenantId, now)), tenantId, at: now };
  switch (event.event) {
    case 'tool.call':
      return { ...updated, detail: `calling ${text(data.name) ?? 'a tool'}` };
    case 'approval.required':
      return {
        ...updated,
        status: 'awaiting_approval',
        detail: `${text(data.name) ?? 'tool'} needs approval`,
      };
    case 'approval.decided':
      return { ...updated, status: 'running', detail: `approval ${text(data.decision) ?? 'decided'}` };
    case 'tool.result':
      return { ...updated, detail: `${text(data.name) ?? 'tool'} ${data.ok ? 'answered' : 'failed'}` };
    case 'usage':
      return { ...updated, costUsd: updated.costUsd + (typeof data.costUsd === 'number' ? data.costUsd : 0) };
    case 'turn.completed':
      return { ...updated, status: 'completed', detail: text(data.finishReason) ?? '' };
    case 'turn.failed':
      return {
        ...updated,
        status: 'failed',
        detail: text((data.error as { message?: unknown })?.message) ?? '',
      };
    case 'turn.cancelled':
      return { ...updated, status: 'cancelled', detail: '' };
    default:
      return updated;
  }
};

/** The rows with a row added for each pending approval's conversation that has none yet. */
export const seeded = (
  rows: ReadonlyMap<string, TurnRow>,
  approvals: readonly TenantApproval[],
): Map<string, TurnRow> => {
  const next = new Map(rows);
  for (const approval of approvals) {
    if (next.has(approval.conversationId)) continue;
    next.set(approval.conversationId, {
      conversationId: approval.conversationId,
      tenantId: approval.tenantId,
      status: 'awaiting_approval',
      detail: `${approval.tool} needs approval`,
      costUsd: 0,
      at: Date.parse(approval.requestedAt) || 0,
    });
  }
  return next;
};

/** The rows with a row added for each running turn's conversation that has none yet. */
export const seededTurns = (
  rows: ReadonlyMap<string, TurnRow>,
  turns: readonly RunningTurn[],
): Map<string, TurnRow> => {
  const next = new Map(rows);
  for (const turn of turns) {
    if (next.has(turn.conversationId)) continue;
    next.set(turn.conversationId, {
      ...started(turn.conversationId, turn.tenantId, Date.parse(turn.startedAt) || 0),
      detail: `${turn.agentId} running`,
    });
  }
  return next;
};
