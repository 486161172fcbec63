import type { ConversationErasure } from '@keel/runtime';
import type { OutcomeSealing } from './mongo-ledger.js';

/** Where the ledger keeps an outcome: what `ConversationErasure.sealFor` binds it to. */
const PURPOSE = 'tool-outcome';

/**
 * Outcomes (webhook and MCP results) sealed with their conversation's data key, as JSON text: a
 * deleted conversation's results are erased from the ledger with the rest of it.
 */
export const outcomeSealing = (erasure: ConversationErasure): OutcomeSealing => ({
  seal: async (tenantId, conversationId, text) => {
    const sealed = await erasure.sealFor(tenantId, conversationId, PURPOSE, text);
    if (sealed === undefined) return undefined;
    return typeof sealed === 'string' ? sealed : JSON.stringify(sealed);
  },
  open: async (tenantId, conversationId, stored) => {
    // A sealed outcome is its envelope's JSON; one kept before sealing is the outcome's own JSON.
    const value: unknown = stored.startsWith('{"__sealed"') ? JSON.parse(stored) : stored;
    const text = await erasure.openFor(tenantId, conversationId, PURPOSE, value);
    return typeof text === 'string' ? text : undefined;
  },
});
