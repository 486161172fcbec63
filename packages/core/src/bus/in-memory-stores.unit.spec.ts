import { describeBusStoresContract } from './bus-stores.contract.js';
import { InMemoryDeadLetters } from './in-memory-dead-letters.js';
import { InMemoryInbox } from './in-memory-inbox.js';

describeBusStoresContract('in-memory', async () => ({
  inbox: new InMemoryInbox(),
  deadLetters: new InMemoryDeadLetters(),
  cleanup: async () => {},
}));
