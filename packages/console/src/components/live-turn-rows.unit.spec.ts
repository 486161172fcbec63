import { describe, expect, it } from 'vitest';
import type { FeedEvent, TenantApproval } from '../api/types';
import type { TurnRow } from './live-turn-rows';
import { nextRow, seeded, seededTurns } from './live-turn-rows';

/** A frame as the log feeds send it: every one names its conversation and tenant. */
const frame = (event: string, data: Record<string, unknown>): FeedEvent => ({
  id: '1',
  event,
  data: { conversationId: 'c1', tenantId: 'tn_a', ...data },
});

const replay = (events: FeedEvent[], from?: TurnRow): TurnRow | undefined =>
  events.reduce<TurnRow | undefined>((row, event, index) => nextRow(row, event, index), from);

describe('the live list of turns, from the events feed', () => {
  it('a turn waiting for approval shows as such, and runs again once decided (the decision names no turn)', () => {
    const waiting = replay([
      frame('turn.started', { turnId: 't1' }),
      frame('tool.call', { turnId: 't1', name: 'refund', args: { id: 'B-2' } }),
      frame('approval.required', { turnId: 't1', name: 'refund', approvalId: 'a1' }),
    ]);
    expect(waiting).toMatchObject({
      conversationId: 'c1',
      tenantId: 'tn_a',
      status: 'awaiting_approval',
      detail: 'refund needs approval',
    });
    expect(
      nextRow(waiting, frame('approval.decided', { approvalId: 'a1', decision: 'approve' }), 9),
    ).toMatchObject({
      status: 'running',
      detail: 'approval approve',
      at: 9,
    });
  });

  it('adds up the cost of every model call of the turn, and a new turn starts from zero', () => {
    const done = replay([
      frame('turn.started', { turnId: 't1' }),
      frame('usage', { turnId: 't1', costUsd: 0.25 }),
      frame('usage', { turnId: 't1', costUsd: 0.5 }),
      frame('turn.completed', { turnId: 't1', finishReason: 'stop' }),
    ]);
    expect(done).toMatchObject({ status: 'completed', detail: 'stop', costUsd: 0.75 });
    expect(replay([frame('turn.started', { turnId: 't2' })], done)).toMatchObject({
      status: 'running',
      costUsd: 0,
    });
  });

  it('a failed turn shows its error message; a cancelled one says so', () => {
    expect(
      replay([
        frame('turn.started', {}),
        frame('turn.failed', { error: { code: 'model', message: 'boom' } }),
      ]),
    ).toMatchObject({ status: 'failed', detail: 'boom' });
    expect(replay([frame('turn.started', {}), frame('turn.cancelled', {})])).toMatchObject({
      status: 'cancelled',
    });
  });

  it('an event that names no conversation changes nothing', () => {
    expect(nextRow(undefined, { id: '2', event: 'turn.started', data: { turnId: 't1' } })).toBeUndefined();
  });

  it('pending approvals seed rows for conversations the feed has not shown; the feed wins', () => {
    const approval = (conversationId: string): TenantApproval => ({
      tenantId: 'tn_a',
      conversationId,
      approvalId: `a-${conversationId}`,
      toolCallId: 'tc',
      tool: 'refund',
      args: {},
      requestedAt: '2026-11-24T03:00:00.000Z',
    });
    const live = new Map([['c1', replay([frame('turn.started', {})])!]]);
    const rows = seeded(live, [approval('c1'), approval('c2')]);
    expect(rows.get('c1')).toMatchObject({ status: 'running' });
    expect(rows.get('c2')).toMatchObject({
      tenantId: 'tn_a',
      status: 'awaiting_approval',
      detail: 'refund needs approval',
      at: Date.parse('2026-11-24T03:00:00.000Z'),
    });
    expect(
      nextRow(rows.get('c2'), frame('approval.decided', { conversationId: 'c2', decision: 'deny' })),
    ).toMatchObject({ conversationId: 'c2', status: 'running', detail: 'approval deny' });
  });

  it('turns running when the page opened are rows; an approval seeded first keeps its status', () => {
    const turn = (conversationId: string) => ({
      tenantId: 'tn_a',
      conversationId,
      turnId: `t-${conversationId}`,
      agentId: 'support',
      startedAt: '2026-11-24T02:00:00.000Z',
    });
    const waiting: TenantApproval = {
      tenantId: 'tn_a',
      conversationId: 'c2',
      approvalId: 'a1',
      toolCallId: 'call-1',
      tool: 'refund',
      args: {},
      requestedAt: '2026-11-24T03:00:00.000Z',
    };
    const rows = seededTurns(seeded(new Map(), [waiting]), [turn('c1'), turn('c2')]);
    expect(rows.get('c1')).toMatchObject({
      tenantId: 'tn_a',
      status: 'running',
      detail: 'support running',
      at: Date.parse('2026-11-24T02:00:00.000Z'),
    });
    expect(rows.get('c2')).toMatchObject({ status: 'awaiting_approval' });
    expect(nextRow(rows.get('c1'), frame('turn.completed', { finishReason: 'stop' }))).toMatchObject({
      status: 'completed',
    });
  });
});
