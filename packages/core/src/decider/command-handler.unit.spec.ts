import { describe, expect, it } from 'vitest';
import { ConcurrencyError, PreconditionError } from '../errors/index.js';
import { InMemoryEventStore } from '../event-store/index.js';
import type { EventStore } from '../event-store/index.js';
import { DeciderSpec } from '../testing/index.js';
import type { EventData } from '../typing/index.js';
import { CommandHandler } from './command-handler.js';
import type { Decider } from './decider.js';

type AccountEvent = EventData<'Opened', { owner: string }> | EventData<'Deposited', { cents: number }>;
type AccountCommand = { type: 'Open'; owner: string } | { type: 'Deposit'; cents: number };
interface Account {
  open: boolean;
  balance: number;
}

const account: Decider<Account, AccountCommand, AccountEvent> = {
  initialState: () => ({ open: false, balance: 0 }),
  decide: (command, state) => {
    switch (command.type) {
      case 'Open':
        return state.open ? [] : [{ type: 'Opened', data: { owner: command.owner } }];
      case 'Deposit':
        if (!state.open) throw new PreconditionError('account is not open');
        return [{ type: 'Deposited', data: { cents: command.cents } }];
    }
  },
  evolve: (state, event) => {
    switch (event.type) {
      case 'Opened':
        return { ...state, open: true };
      case 'Deposited':
        return { ...state, balance: state.balance + event.data.cents };
    }
  },
};

const spec = DeciderSpec.for(account);

describe('given/when/then for deciders', () => {
  it('decides from the state the given events build', () => {
    spec
      .given([{ type: 'Opened', data: { owner: 'ana' } }])
      .when({ type: 'Deposit', cents: 5 })
      .then([{ type: 'Deposited', data: { cents: 5 } }]);
    spec
      .given([])
      .when({ type: 'Deposit', cents: 5 })
      .thenThrows(PreconditionError, /not open/);
    spec
      .given([{ type: 'Opened', data: { owner: 'ana' } }])
      .when({ type: 'Open', owner: 'ana' })
      .then([]);
    spec
      .given([{ type: 'Opened', data: { owner: 'ana' } }])
      .when({ type: 'Deposit', cents: 7 })
      .thenState({ open: true, balance: 7 });
  });

  it('fails when the decision differs from the expectation', () => {
    expect(() =>
      spec
        .given([])
        .when({ type: 'Open', owner: 'ana' })
        .then([{ type: 'Opened', data: { owner: 'bob' } }]),
    ).toThrow();
    expect(() => spec.given([]).when({ type: 'Open', owner: 'ana' }).thenThrows(PreconditionError)).toThrow();
  });
});

describe('command handler', () => {
  it('loads, decides, appends with the expected version and carries metadata', async () => {
    const store = new InMemoryEventStore();
    const handler = new CommandHandler(store, account);
    await handler.handle(
      'acme',
      'account-1',
      { type: 'Open', owner: 'ana' },
      { metadata: { correlationId: 'r1' } },
    );
    const result = await handler.handle('acme', 'account-1', { type: 'Deposit', cents: 10 });
    expect(result.state).toEqual({ open: true, balance: 10 });
    expect(result.version).toBe(2);
    expect((await store.read('acme', 'account-1'))[0]?.metadata).toEqual({ correlationId: 'r1' });
    const noop = await handler.handle('acme', 'account-1', { type: 'Open', owner: 'ana' });
    expect(noop.events).toEqual([]);
    expect(await store.streamVersion('acme', 'account-1')).toBe(2);
  });

  it('retries a lost race a bounded number of times, then gives up with the conflict', async () => {
    const store = new InMemoryEventStore();
    await new CommandHandler(store, account).handle('acme', 'account-1', { type: 'Open', owner: 'ana' });
    let interference = 2;
    // Another writer slips an event in between each load and append, `interference` times.
    const racing: EventStore = Object.assign(Object.create(store) as EventStore, {
      append: async (...args: Parameters<EventStore['append']>) => {
        if (interference-- > 0)
          await store.append('acme', 'account-1', [{ type: 'Deposited', data: { cents: 1 } }]);
        return store.append(...args);
      },
    });
    const waits: number[] = [];
    const retryDelayMs = (attempt: number) => (waits.push(attempt), 0);
    const result = await new CommandHandler(racing, account, { maxRetries: 3, retryDelayMs }).handle(
      'acme',
      'account-1',
      { type: 'Deposit', cents: 100 },
    );
    expect(result.state.balance).toBe(102);
    // A pause before each retry, none before the first try.
    expect(waits).toEqual([1, 2]);

    interference = 10;
    await expect(
      new CommandHandler(racing, account, { maxRetries: 2 }).handle('acme', 'account-1', {
        type: 'Deposit',
        cents: 1,
      }),
    ).rejects.toBeInstanceOf(ConcurrencyError);
  });

  it('a decision refused by the decider writes nothing', async () => {
    const store = new InMemoryEventStore();
    await expect(
      new CommandHandler(store, account).handle('acme', 'account-9', { type: 'Deposit', cents: 1 }),
    ).rejects.toBeInstanceOf(PreconditionError);
    expect(await store.streamVersion('acme', 'account-9')).toBe(0);
  });
});
