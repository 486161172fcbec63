import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RecordedEvent } from '@keel/core';
import { clientDeadlineChange } from '../turn/client-call-deadlines.js';
import { DeadlineAlarm } from './deadline-alarm.js';
import type { Deadline } from './deadlines.js';
import { InMemoryDeadlines } from './deadlines.js';

const start = Date.parse('2026-11-21T10:00:00.000Z');
const at = (ms: number) => new Date(start + ms).toISOString();

describe('DeadlineAlarm', () => {
  afterEach(() => vi.useRealTimers());

  it('fires a stored deadline after a restart, and again at each poll until its owner clears it', async () => {
    vi.useFakeTimers({ now: start });
    const deadlines = new InMemoryDeadlines();
    await deadlines.record({ tenantId: 't1', id: 'c1/k', dueAt: at(1_000) });
    const fired: Deadline[] = [];
    // A new process: nothing armed yet; the store says what is due.
    const alarm = new DeadlineAlarm({
      deadlines,
      onDue: (d) => {
        fired.push(d);
        return Promise.resolve();
      },
      onError: () => undefined,
      pollMs: 5_000,
    });
    await alarm.start();
    await vi.advanceTimersByTimeAsync(999);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(20);
    expect(fired.map((d) => d.id)).toEqual(['c1/k']);
    // Not cleared: the next poll fires it again (onDue must be idempotent).
    await vi.advanceTimersByTimeAsync(5_000);
    expect(fired).toHaveLength(2);
    await alarm.clear('t1', 'c1/k');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fired).toHaveLength(2);
    expect(await deadlines.all()).toEqual([]);
    alarm.stop();
  });

  it('set stores before it arms: another instance polling the store fires it too', async () => {
    vi.useFakeTimers({ now: start });
    const deadlines = new InMemoryDeadlines();
    const seen: string[] = [];
    const alarm = (name: string) =>
      new DeadlineAlarm({
        deadlines,
        onDue: () => {
          seen.push(name);
          return Promise.resolve();
        },
        onError: () => undefined,
        pollMs: 500,
      });
    const [a, b] = [alarm('a'), alarm('b')];
    await a.start();
    await b.start();
    await a.set({ tenantId: 't1', id: 'r1', dueAt: at(2_000) });
    a.stop(); // the instance that armed it dies
    await vi.advanceTimersByTimeAsync(3_000);
    expect(seen).toContain('b');
    expect(seen).not.toContain('a');
    b.stop();
  });
});

describe('clientDeadlineChange', () => {
  const event = (type: string, data: Record<string, unknown>): RecordedEvent =>
    ({ type, data, tenantId: 't1', streamName: 'conversation-c1' }) as unknown as RecordedEvent;

  it('a client call starts its deadline when requested without approval or when approved; any result ends it', () => {
    const dueAt = at(90_000);
    expect(
      clientDeadlineChange(
        event('ToolCallRequested', { toolCallId: 'k', executor: 'client', deadline: dueAt }),
      ),
    ).toEqual({ kind: 'set', deadline: { tenantId: 't1', id: 'c1/k', dueAt } });
    expect(
      clientDeadlineChange(
        event('ApprovalDecided', { toolCallId: 'k', decision: 'approve', deadline: dueAt }),
      ),
    ).toEqual({ kind: 'set', deadline: { tenantId: 't1', id: 'c1/k', dueAt } });
    // Waiting for its approval, a webhook call, a denial: no deadline.
    expect(
      clientDeadlineChange(event('ToolCallRequested', { toolCallId: 'k', executor: 'client' })),
    ).toBeUndefined();
    expect(clientDeadlineChange(event('ToolCallRequested', { toolCallId: 'w' }))).toBeUndefined();
    expect(
      clientDeadlineChange(event('ApprovalDecided', { toolCallId: 'k', decision: 'deny' })),
    ).toBeUndefined();
    expect(clientDeadlineChange(event('ToolCallCompleted', { toolCallId: 'k', ok: true }))).toEqual({
      kind: 'clear',
      tenantId: 't1',
      id: 'c1/k',
    });
  });
});
