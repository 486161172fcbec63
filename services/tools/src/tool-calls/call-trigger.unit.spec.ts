import { describe, expect, it } from 'vitest';
import { outcomeMayBeRecorded } from './call-trigger.js';

describe('outcomeMayBeRecorded', () => {
  const now = Date.parse('2030-01-01T00:02:00Z');
  const delivery = (recordedAt: string, deliveryCount = 1, replayOf?: string) => ({
    event: { recordedAt },
    deliveryCount,
    ...(replayOf === undefined ? {} : { replayOf }),
  });

  it('asks the log first for a redelivery, a replay, or a trigger a minute old; not for a fresh first delivery', () => {
    expect(outcomeMayBeRecorded(delivery('2030-01-01T00:01:30Z'), now)).toBe(false);
    expect(outcomeMayBeRecorded(delivery('2030-01-01T00:01:30Z', 2), now)).toBe(true);
    expect(outcomeMayBeRecorded(delivery('2030-01-01T00:01:30Z', 1, 'dl-1'), now)).toBe(true);
    expect(outcomeMayBeRecorded(delivery('2030-01-01T00:01:00Z'), now)).toBe(true);
    expect(outcomeMayBeRecorded(delivery('not a time'), now)).toBe(true);
  });
});
