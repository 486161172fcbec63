import { describe, expect, it } from 'vitest';
import { describeAppendWatchContract } from './append-watch.contract.js';
import { describeEventStoreContract } from './event-store.contract.js';
import { InMemoryEventStore } from './in-memory-event-store.js';

describeEventStoreContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  return { store, second: store, cleanup: () => store.close() };
});

describeAppendWatchContract('in-memory', async () => {
  const store = new InMemoryEventStore();
  return { store, cleanup: () => store.close() };
});

describe('in-memory event store', () => {
  it('hands out copies: changing what a read returned changes nothing stored', async () => {
    const store = new InMemoryEventStore();
    const data = { items: [1, 2], owner: { name: 'ana' } };
    const appended = await store.append('acme', 'cart-1', [{ type: 'Filled', data }]);
    data.items.push(3);
    (appended.events[0]!.data as typeof data).owner.name = 'mallory';
    const [read] = await store.read('acme', 'cart-1');
    (read!.data as typeof data).items.length = 0;
    const page = await store.readAll({ scope: 'all-tenants' });
    expect(page.events[0]!.data).toEqual({ items: [1, 2], owner: { name: 'ana' } });
    expect((await store.read('acme', 'cart-1'))[0]!.data).toEqual({ items: [1, 2], owner: { name: 'ana' } });
  });
});
