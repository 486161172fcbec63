// The live list's state, pure: a turn's row after each event of a durable events feed (the
// operator's or a tenant's), whatever order the turns interleave in.
import type { FeedEvent } from '../api/types';

/** A turn as the live list shows it. */
export interface TurnRow {
  turnId: string;
  tenantId: string | undefined;
  conversationId: string;
  status: string;
  detail: string;
  costUsd: number;
  at: number;
}

/** The live list shows the latest this many turns. */
export const MAX_ROWS = 25;

/** A string field of an event's data, or undefined. */
export const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The turn's row after one more event at `now` (undefined: the event says nothing of a turn). */
export const nextRow = (
  row: TurnRow | undefined,
  event: FeedEvent,
  now = Date.now(),
): TurnRow | undefined => {
  const { data } = event;
  const turnId = text(data.turnId) ?? row?.turnId;
  const conversationId = text(data.conversationId) ?? row?.conversationId;
  if (!turnId || !conversationId) return row;
  const base: TurnRow = row ?? {
    turnId,
    conversationId,
    tenantId: text(data.tenantId),
    status: 'running',
    detail: '',
    costUsd: 0,
    at: now,
  };
  const updated = { ...base, at: now };
  switch (event.event) {
    case 'turn.started':
      return { ...updated, status: 'running', detail: 'started' };
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
      return { ...updated, costUsd: base.costUsd + (typeof data.costUsd === 'number' ? data.costUsd : 0) };
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
