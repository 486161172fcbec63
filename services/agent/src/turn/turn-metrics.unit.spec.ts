import type { RecordedEvent } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { TurnMetrics } from './turn-metrics.js';
import { TurnTimings } from './turn-metrics.js';

const event = (type: string, turnId: string, at: string): RecordedEvent =>
  ({ type, data: { turnId, at } }) as unknown as RecordedEvent;

const recorder = () => {
  const calls: unknown[][] = [];
  const metrics: TurnMetrics = {
    turnStarted: () => calls.push(['started']),
    turnFinished: (outcome, seconds) => calls.push(['finished', outcome, seconds]),
    firstToken: (model, seconds) => calls.push(['firstToken', model, seconds]),
    modelCall: () => undefined,
    modelUsage: () => undefined,
  };
  return { calls, timings: new TurnTimings(metrics) };
};

describe('turn timings', () => {
  it('counts a turn’s start and end, and times it and its first token from its TurnStarted', () => {
    const { calls, timings } = recorder();
    timings.observe(event('TurnStarted', 't1', '2026-01-01T00:00:00.000Z'));
    timings.observe(event('AssistantMessageCompleted', 't1', '2026-01-01T00:00:01.000Z'));
    timings.token('t1', 'demo:keel-demo', Date.parse('2026-01-01T00:00:01.250Z'));
    // Only the turn's first token is timed.
    timings.token('t1', 'demo:keel-demo', Date.parse('2026-01-01T00:00:02.000Z'));
    timings.observe(event('TurnCompleted', 't1', '2026-01-01T00:00:03.000Z'));
    expect(calls).toEqual([
      ['started'],
      ['firstToken', 'demo:keel-demo', 1.25],
      ['finished', 'completed', 3],
    ]);
  });

  it('counts the end of a turn it did not see start, untimed, and each outcome by its word', () => {
    const { calls, timings } = recorder();
    timings.observe(event('TurnFailed', 'elsewhere', '2026-01-01T00:00:03.000Z'));
    timings.token('elsewhere', 'demo:keel-demo');
    timings.observe(event('TurnStarted', 't2', '2026-01-01T00:00:00.000Z'));
    timings.observe(event('TurnCancelled', 't2', '2026-01-01T00:00:00.500Z'));
    expect(calls).toEqual([['finished', 'failed', undefined], ['started'], ['finished', 'cancelled', 0.5]]);
  });
});
