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

/** `n` idle conversations of tenant `t`, recorded. */
const recordedIdle = async (
  index: ConversationIndex,
  t: string,
  n: number,
): Promise<IndexedConversation[]> => {
  const entries = Array.from({ length: n }, (_, i) => ({ ...entry(t, i), status: 'idle' }));
  for (const e of entries) await index.record(e);
  return entries;
};

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

    it('filters by agent, user, status and metadata, paging correctly within the filter', async () => {
      const index = await setup();
      const t = tenant();
      const all = Array.from({ length: 6 }, (_, n) => ({
        ...entry(t, n % 2),
        userId: n < 3 ? 'ana' : 'bo',
        metadata: { site: n % 3 === 0 ? 'x' : 'y', lang: 'en' },
        status: 'idle',
      }));
      for (const e of all) await index.record(e);
      const ids = async (filter: Parameters<ConversationIndex['list']>[2], limit = 2) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await index.list(t, { limit, ...(cursor ? { cursor } : {}) }, filter);
          seen.push(...page.conversations.map((c) => c.conversationId));
          cursor = page.nextCursor;
        } while (cursor);
        return seen;
      };
      const newestFirst = [...all].reverse();
      const expected = (keep: (e: (typeof all)[number]) => boolean) =>
        newestFirst.filter(keep).map((e) => e.conversationId);
      expect(await ids({ agentId: 'agent-1' })).toEqual(expected((e) => e.agentId === 'agent-1'));
      expect(await ids({ userId: 'ana' })).toEqual(expected((e) => e.userId === 'ana'));
      expect(await ids({ metadata: { site: 'x', lang: 'en' } }, 1)).toEqual(
        expected((e) => e.metadata.site === 'x'),
      );
      expect(await ids({ userId: 'bo', agentId: 'agent-0' })).toEqual(
        expected((e) => e.userId === 'bo' && e.agentId === 'agent-0'),
      );
      expect(await ids({ status: 'running' })).toEqual([]);
      expect(await ids({ metadata: { site: 'nope' } })).toEqual([]);
    });

    it('updates follow the latest version, whatever the order; a list filters on the updated fields', async () => {
      const index = await setup();
      const t = tenant();
      const e = { ...entry(t, 1), status: 'idle' };
      await index.record(e);
      await index.update({ ...e, status: 'failed', title: 'new', metadata: { k: 'v' }, version: 7 });
      await index.update({ ...e, status: 'running', version: 5 });
      await index.record({ ...e, title: 'ignored' });
      expect((await index.list(t, {}, { status: 'failed' })).conversations).toEqual([
        { ...e, status: 'failed', title: 'new', metadata: { k: 'v' }, version: 7 },
      ]);
      expect((await index.list(t, {}, { status: 'running' })).conversations).toEqual([]);
      const late = { ...entry(t, 2), status: 'running', version: 3 };
      await index.update(late);
      expect((await index.list(t, {}, { metadata: { k: 'v' } })).conversations).toHaveLength(1);
      expect((await index.list(t, {}, { status: 'running' })).conversations).toEqual([late]);
    });

    it('removes a deleted conversation (twice is harmless); the others stay', async () => {
      const index = await setup();
      const t = tenant();
      const [kept, gone] = [entry(t, 1, 'kept'), entry(t, 2, 'gone')];
      await index.record(kept);
      await index.record(gone);
      await index.remove(t, gone.conversationId);
      await index.remove(t, gone.conversationId);
      expect((await index.list(t)).conversations.map((c) => c.conversationId)).toEqual([kept.conversationId]);
    });

    it('a late record or update of a removed conversation does not bring it back', async () => {
      const index = await setup();
      const t = tenant();
      const gone = entry(t, 1, 'gone');
      await index.record(gone);
      await index.remove(t, gone.conversationId);
      await index.update({ ...gone, status: 'idle', version: 9 });
      await index.record(gone);
      // Removed before it was ever listed (the deletion handled first): the same.
      const never = entry(t, 2, 'never');
      await index.remove(t, never.conversationId);
      await index.record(never);
      await index.update({ ...never, status: 'running', version: 3 });
      expect((await index.list(t)).conversations).toEqual([]);
      expect((await index.list(t, {}, { status: 'idle' })).conversations).toEqual([]);
    });

    it('concurrent updates of many conversations leave each at its latest version', async () => {
      const index = await setup();
      const t = tenant();
      const entries = await recordedIdle(index, t, 20);
      // Writers of one entry at once (instances, or deliveries the projection runs concurrently).
      await Promise.all(
        entries.flatMap((e) => [6, 5, 7, 4].map((v) => index.update({ ...e, title: `v${v}`, version: v }))),
      );
      const { conversations } = await index.list(t, { limit: 100 });
      expect(conversations.filter((c) => c.version !== 7).map((c) => c.title)).toEqual([]);
    });

    it('a conversation removed while updates of it run stays removed', async () => {
      const index = await setup();
      const t = tenant();
      const entries = await recordedIdle(index, t, 20);
      await Promise.all(
        entries.flatMap((e) => [
          index.update({ ...e, status: 'running', version: 3 }),
          index.remove(t, e.conversationId),
          index.update({ ...e, status: 'idle', version: 4 }),
        ]),
      );
      expect((await index.list(t, { limit: 100 })).conversations.map((c) => c.title ?? c.status)).toEqual([]);
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
