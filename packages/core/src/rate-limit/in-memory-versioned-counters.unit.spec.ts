// Runs the VersionedCounters contract suite (its assertions are in versioned-counters.contract.ts) on the in-memory store.
import { InMemoryVersionedCounters } from './in-memory-versioned-counters.js';
import { describeVersionedCountersContract } from './versioned-counters.contract.js';

describeVersionedCountersContract('in memory', () =>
  Promise.resolve({ counters: new InMemoryVersionedCounters(), cleanup: () => Promise.resolve() }),
);
