import { describe, expect, it } from 'vitest';
import type { EventData, RecordedEvent } from '../typing/index.js';
import { isEvent } from '../typing/index.js';
import { fold, foldRecorded } from './decider.js';

type Opened = EventData<'Opened', { owner: string }>;
type Deposited = EventData<'Deposited', { cents: number }>;
type AccountEvent = Opened | Deposited;

const account = {
  initialState: () => ({ owner: '', balance: 0 }),
  evolve: (state: { owner: string; balance: number }, event: AccountEvent) =>
    event.type === 'Opened'
      ? { ...state, owner: event.data.owner }
      : { ...state, balance: state.balance + event.data.cents },
};

const recorded = (version: number, event: AccountEvent): RecordedEvent => ({
  ...event,
  eventId: `e${version}`,
  metadata: {},
  tenantId: 't1',
  streamName: 'account-a1',
  version,
  commitId: `c${version}`,
  recordedAt: '2026-11-24T00:00:00.000Z',
});

describe('fold', () => {
  const events: AccountEvent[] = [
    { type: 'Opened', data: { owner: 'ana' } },
    { type: 'Deposited', data: { cents: 5 } },
  ];

  it('folds from the initial state, or from a given one', () => {
    expect(fold(account, events)).toEqual({ owner: 'ana', balance: 5 });
    expect(fold(account, events.slice(1), { owner: 'bo', balance: 10 })).toEqual({
      owner: 'bo',
      balance: 15,
    });
  });

  it('folds events read from the log like the events the decider produced', () => {
    const read = events.map((event, i) => recorded(i + 1, event));
    expect(foldRecorded(account, read)).toEqual(fold(account, events));
  });
});

describe('isEvent', () => {
  it('narrows a recorded event by its type, keeping what the log added', () => {
    const event = recorded(2, { type: 'Deposited', data: { cents: 7 } });
    expect(isEvent<Opened>(event, 'Opened')).toBe(false);
    if (!isEvent<Deposited>(event, 'Deposited')) throw new Error('not narrowed');
    expect(event.data.cents + event.version).toBe(9);
  });
});
