import { describe, expect, it } from 'vitest';
import { describeLedgerContract } from './ledger.contract.js';
import { InMemoryToolCallLedger } from './ledger.js';

describeLedgerContract('in-memory', async () => {
  const ledger = new InMemoryToolCallLedger();
  return { ledger, second: ledger, cleanup: async () => undefined };
});

describe('in-memory ledger', () => {
  it('stamps records with its clock and hands out copies', async () => {
    const ledger = new InMemoryToolCallLedger({ now: () => new Date('2026-11-21T10:00:00.000Z') });
    const key = { tenantId: 'acme', toolCallId: 'call-1' };
    const first = await ledger.begin(key, { conversationId: 'c1', name: 'lookup' });
    expect(first.state).toBe('new');
    expect(JSON.stringify(first.record)).toContain('2026-11-21T10:00:00.000Z');
    (first.record as { conversationId: string }).conversationId = 'tampered';
    const again = await ledger.begin(key, { conversationId: 'c1', name: 'lookup' });
    expect(again.state).toBe('in-flight');
    expect(again.record).toMatchObject({ conversationId: 'c1' });
  });
});
