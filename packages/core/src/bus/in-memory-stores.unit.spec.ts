import { describe, expect, it } from 'vitest';
import { describeBusStoresContract } from './bus-stores.contract.js';
import { InMemoryDeadLetters } from './in-memory-dead-letters.js';
import { InMemoryInbox } from './in-memory-inbox.js';

describeBusStoresContract('in-memory', async () => ({
  inbox: new InMemoryInbox(),
  deadLetters: new InMemoryDeadLetters(),
  cleanup: async () => {},
}));

describe('in-memory dead letters', () => {
  it('keep what was recorded, whatever the caller does with its objects afterwards', async () => {
    const deadLetters = new InMemoryDeadLetters();
    const event = {
      eventId: '01a1fff1-dce9-70aa-9a9a-3561fa88a758',
      type: 'T',
      data: { n: 1 },
      metadata: {},
      tenantId: 'acme',
      streamName: 'doc-1',
      version: 1,
      commitId: '01a1fff1-dce9-70ab-b2fc-c15f3b1fe11c',
      recordedAt: new Date().toISOString(),
    };
    const letter = {
      id: 'dl-1',
      consumer: 'c',
      tenantId: 'acme',
      event,
      error: 'e',
      deliveryCount: 3,
      deadAt: 'now',
    };
    await deadLetters.record(letter);
    event.data.n = 2;
    const [listed] = await deadLetters.list();
    (listed!.event.data as { n: number }).n = 3;
    expect((await deadLetters.get('dl-1'))?.event.data).toEqual({ n: 1 });
  });
});
