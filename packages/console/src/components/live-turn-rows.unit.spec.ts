import { describe, expect, it } from 'vitest';
import type { FeedEvent } from '../api/types';
import type { TurnRow } from './live-turn-rows';
import { nextRow } from './live-turn-rows';

const frame = (event: string, data: Record<string, unknown>): FeedEvent => ({
  id: '1',
  event,
  data: { conversationId: 'c1', tenantId: 'tn_a', turnId: 't1', ...data },
});

const replay = (events: FeedEvent[]): TurnRow | undefined =>
  events.reduce<TurnRow | undefined>((row, event, index) => nextRow(row, event, index), undefined);

describe('the live list of turns, from the events feed', () => {
  it('a turn waiting for approval shows as such, with the tool named, and runs again once decided', () => {
    const waiting = replay([
      frame('turn.started', {}),
      frame('tool.call', { name: 'refund', args: { id: 'B-2' } }),
      frame('approval.required', { name: 'refund', approvalId: 'a1' }),
    ]);
    expect(waiting).toMatchObject({
      conversationId: 'c1',
      tenantId: 'tn_a',
      status: 'awaiting_approval',
      detail: 'refund needs approval',
    });
    expect(nextRow(waiting, frame('approval.decided', { decision: 'approve' }), 9)).toMatchObject({
      status: 'running',
      detail: 'approval approve',
      at: 9,
    });
  });

  it('adds up the cost of every model call and ends with the turn', () => {
    const row = replay([
      frame('turn.started', {}),
      frame('usage', { costUsd: 0.25 }),
      frame('usage', { costUsd: 0.5 }),
      frame('turn.completed', { finishReason: 'stop' }),
    ]);
    expect(row).toMatchObject({ status: 'completed', detail: 'stop', costUsd: 0.75 });
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

  it('an event that names no conversation or turn changes nothing', () => {
    expect(nextRow(undefined, { id: '2', event: 'turn.started', data: { turnId: 't1' } })).toBeUndefined();
  });
});
