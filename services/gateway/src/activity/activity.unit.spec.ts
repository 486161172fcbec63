import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { Activity, conversationOf } from './activity.js';

let position = 0;
const event = (
  tenantId: string,
  conversationId: string,
  type: string,
  data: Record<string, unknown>,
): RecordedEvent => ({
  eventId: `e${++position}`,
  type,
  data,
  metadata: { correlationId: 'c' },
  tenantId,
  streamName: `conversation-${conversationId}`,
  version: position,
  globalPosition: position,
  commitId: `c${position}`,
  recordedAt: new Date(position * 1000).toISOString(),
});

const asked = (tenantId: string, conversationId: string, turnId: string, approvalId: string, at: string) =>
  event(tenantId, conversationId, 'ApprovalRequested', {
    turnId,
    approvalId,
    toolCallId: `call-${approvalId}`,
    name: 'refund',
    args: { id: approvalId },
    requestedAt: at,
  });

/** A TurnStarted of agent `support` at `at`. */
const started = (tenantId: string, conversationId: string, turnId: string, at = '2026-01-01T00:00:00Z') =>
  event(tenantId, conversationId, 'TurnStarted', { turnId, agent: { agentId: 'support' }, at });

describe('Activity (running turns and pending approvals folded from the log)', () => {
  it("forgets a deleted conversation's running turn and pending approval, and only that conversation's", () => {
    const activity = new Activity();
    activity.apply(started('acme', 'c1', 't1'));
    activity.apply(asked('acme', 'c1', 't1', 'a1', '2026-01-01T00:00:01Z'));
    activity.apply(started('acme', 'c10', 't2'));
    activity.apply(asked('acme', 'c10', 't2', 'a2', '2026-01-01T00:00:02Z'));
    activity.apply(event('acme', 'c1', 'ConversationDeleted', { conversationId: 'c1', by: 'k', at: 'x' }));
    expect(activity.pendingApprovals('acme').map((a) => a.approvalId)).toEqual(['a2']);
    expect(activity.runningTurns('acme').map((t) => t.turnId)).toEqual(['t2']);
  });

  it('keeps an approval pending from its request until its decision, with the step text as message', () => {
    const activity = new Activity();
    activity.apply(started('acme', 'c1', 't1', '2026-01-01T00:00:03Z'));
    activity.apply(event('acme', 'c1', 'AssistantMessageCompleted', { turnId: 't1', text: 'Refunding.' }));
    activity.apply(asked('acme', 'c1', 't1', 'a1', '2026-01-01T00:00:02Z'));
    activity.apply(started('globex', 'c2', 't2', '2026-01-01T00:00:00Z'));
    activity.apply(asked('globex', 'c2', 't2', 'a2', '2026-01-01T00:00:01Z'));
    expect(activity.pendingApprovals().map((a) => a.approvalId)).toEqual(['a2', 'a1']);
    expect(activity.pendingApprovals('acme')).toEqual([
      {
        tenantId: 'acme',
        conversationId: 'c1',
        approvalId: 'a1',
        toolCallId: 'call-a1',
        tool: 'refund',
        args: { id: 'a1' },
        message: 'Refunding.',
        requestedAt: '2026-01-01T00:00:02Z',
      },
    ]);
    expect(activity.pendingApprovals('globex')[0]).not.toHaveProperty('message');
    activity.apply(
      event('acme', 'c1', 'ApprovalDecided', { turnId: 't1', approvalId: 'a1', decision: 'approve' }),
    );
    expect(activity.pendingApprovals('acme')).toEqual([]);
    // Oldest first, with their agent and start.
    expect(activity.runningTurns()).toEqual([
      {
        tenantId: 'globex',
        conversationId: 'c2',
        turnId: 't2',
        agentId: 'support',
        startedAt: '2026-01-01T00:00:00Z',
      },
      {
        tenantId: 'acme',
        conversationId: 'c1',
        turnId: 't1',
        agentId: 'support',
        startedAt: '2026-01-01T00:00:03Z',
      },
    ]);
  });

  it('ends a turn on completion, failure or cancel, withdrawing its approvals; tenants never mix', () => {
    const activity = new Activity();
    for (const [turnId, end] of [
      ['t1', 'TurnCompleted'],
      ['t2', 'TurnFailed'],
      ['t3', 'TurnCancelled'],
    ] as const) {
      activity.apply(started('acme', 'c1', turnId));
      activity.apply(asked('acme', 'c1', turnId, `a-${turnId}`, '2026-01-01T00:00:00Z'));
      // The same ids in another tenant are another turn and another approval.
      activity.apply(started('globex', 'c1', turnId));
      activity.apply(asked('globex', 'c1', turnId, `a-${turnId}`, '2026-01-01T00:00:00Z'));
      activity.apply(event('acme', 'c1', end, { turnId }));
    }
    expect(activity.runningTurns('acme')).toEqual([]);
    expect(activity.pendingApprovals('acme')).toEqual([]);
    expect(activity.runningTurns('globex')).toHaveLength(3);
    expect(activity.pendingApprovals('globex')).toHaveLength(3);
  });

  it('reads only conversation streams', () => {
    expect(conversationOf('conversation-abc-1')).toBe('abc-1');
    expect(conversationOf('tenants-registry')).toBeUndefined();
    expect(conversationOf('conversations-x')).toBeUndefined();
    const activity = new Activity();
    activity.apply({ ...started('acme', 'x', 't'), streamName: 'run-x' });
    expect(activity.runningTurns()).toEqual([]);
  });
});

describe('Activity: client tool calls waiting for their client (the Overview count)', () => {
  const requested = (conversationId: string, turnId: string, toolCallId: string, extra: object) =>
    event('acme', conversationId, 'ToolCallRequested', { turnId, toolCallId, name: 'read_page', ...extra });

  it('counts a client call from its deadline (request, or approval) until its result or its turn ends', () => {
    const activity = new Activity();
    activity.apply(started('acme', 'c1', 't1'));
    activity.apply(requested('c1', 't1', 'k1', { executor: 'client', deadline: '2026-01-01T00:01:30Z' }));
    activity.apply(requested('c1', 't1', 'w1', {})); // a webhook call: the tools service's
    activity.apply(requested('c1', 't1', 'k2', { executor: 'client', approvalRequired: true }));
    expect(activity.clientCallsPending('acme')).toBe(1);
    activity.apply(
      event('acme', 'c1', 'ApprovalDecided', {
        turnId: 't1',
        approvalId: 'a1',
        toolCallId: 'k2',
        decision: 'approve',
        deadline: '2026-01-01T00:02:00Z',
      }),
    );
    expect([activity.clientCallsPending('acme'), activity.clientCallsPending('globex')]).toEqual([2, 0]);
    activity.apply(event('acme', 'c1', 'ToolCallCompleted', { turnId: 't1', toolCallId: 'k1', ok: true }));
    expect(activity.clientCallsPending()).toBe(1);
    activity.apply(event('acme', 'c1', 'TurnCancelled', { turnId: 't1', withdrawnApprovals: [] }));
    expect(activity.clientCallsPending()).toBe(0);
  });
});
