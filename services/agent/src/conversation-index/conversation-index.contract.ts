import { uuidv7, ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { ConversationIndex, IndexedConversation } from './conversation-index.js';
import { encodeCursor } from './conversation-index.js';

let counter = 0;
/** A tenant id unique to this run, so suites sharing a database do not see each other. */
const tenant = (): string => `t${Date.now().toString(36)}${++counter}`;

const entry = (tenantId: string, n: number, title?: string): IndexedConversation => ({
  tenantId,
  conversationId: uuidv7(),
  agentId: `agent-${n}`,
  ...(title ? { title } : {}),
  createdAt: new Date(Date.UTC(2030, 0, 1, 0, 0, n)).toISOString(),
});

/** The conversation-index contract: every adapter must pass all of it. */
export const describeConversationIndexContract = (
  name: string,
  setup: () => Promise<ConversationIndex>,
): void => {
  describe(`conversation index contract: ${name}`, () => {
    it('lists newest first what was recorded, once however often it was recorded', async () => {
      const index = await setup();
      const t = tenant();
      const [a, b, c] = [entry(t, 1, 'first'), entry(t, 2), entry(t, 3, 'third')];
      for (const e of [a, b, c]) await index.record(e);
      await index.record(c);
      await index.record({ ...a, agentId: 'changed', title: 'changed' });
      expect(await index.list(t)).toEqual({ conversations: [c, b, a] });
    });

    it("keeps tenants apart: a tenant never lists another tenant's conversations", async () => {
      const index = await setup();
      const [t1, t2] = [tenant(), tenant()];
      const mine = entry(t1, 1);
      const theirs = entry(t2, 2);
      await index.record(mine);
      await index.record(theirs);
      await index.record({ ...theirs, tenantId: `${t1}x` });
      expect((await index.list(t1)).conversations).toEqual([mine]);
      expect((await index.list(t2)).conversations).toEqual([theirs]);
      expect((await index.list(tenant())).conversations).toEqual([]);
    });

    it('pages with no duplicate and no gap; the last page has no cursor', async () => {
      const index = await setup();
      const t = tenant();
      const all = Array.from({ length: 7 }, (_, n) => entry(t, n));
      for (const e of [...all].reverse()) await index.record(e);
      const seen: IndexedConversation[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await index.list(t, { limit: 3, ...(cursor ? { cursor } : {}) });
        expect(page.conversations.length).toBeLessThanOrEqual(3);
        seen.push(...page.conversations);
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor && pages < 10);
      expect(pages).toBe(3);
      expect(seen).toEqual([...all].reverse());

      const exact = await index.list(t, { limit: 7 });
      expect(exact.conversations).toHaveLength(7);
      expect(exact.nextCursor).toBeUndefined();
    });

    it('defaults to 20 a page; refuses a limit outside 1–100 and a cursor it did not make, by name', async () => {
      const index = await setup();
      const t = tenant();
      for (let n = 0; n < 21; n++) await index.record(entry(t, n));
      const first = await index.list(t);
      expect(first.conversations).toHaveLength(20);
      expect(first.nextCursor).toBeDefined();
      await expect(index.list(t, { limit: 101 })).rejects.toMatchObject({ details: { field: 'limit' } });
      await expect(index.list(t, { limit: -1 })).rejects.toBeInstanceOf(ValidationError);
      for (const cursor of ['not a cursor', encodeCursor('not-a-uuid'), '!!']) {
        await expect(index.list(t, { cursor })).rejects.toMatchObject({ details: { field: 'cursor' } });
      }
    });
  });
};
