import { describeLedgerContract } from './ledger.contract.js';
import { InMemoryToolCallLedger } from './ledger.js';

describeLedgerContract('in-memory', async () => {
  const ledger = new InMemoryToolCallLedger();
  return { ledger, second: ledger, cleanup: async () => undefined };
});
