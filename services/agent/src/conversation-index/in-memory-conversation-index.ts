import type { ConversationIndex, ConversationPage, IndexedConversation } from './conversation-index.js';
import { decodeCursor, encodeCursor, indexKey, pageSize } from './conversation-index.js';

/** The conversation index in memory (dev mode and tests). */
export class InMemoryConversationIndex implements ConversationIndex {
  readonly #entries = new Map<string, IndexedConversation>();

  record(entry: IndexedConversation): Promise<void> {
    const key = indexKey(entry.tenantId, entry.conversationId);
    if (!this.#entries.has(key)) this.#entries.set(key, { ...entry });
    return Promise.resolve();
  }

  list(tenantId: string, page: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    try {
      return Promise.resolve(this.#page(tenantId, page));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  #page(tenantId: string, page: { limit?: number; cursor?: string }): ConversationPage {
    const limit = pageSize(page.limit);
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    const newestFirst = [...this.#entries.values()]
      .filter((e) => e.tenantId === tenantId && (before === undefined || e.conversationId < before))
      .sort((a, b) => (a.conversationId < b.conversationId ? 1 : -1));
    const conversations = newestFirst.slice(0, limit).map((e) => ({ ...e }));
    const last = conversations.at(-1);
    return {
      conversations,
      ...(newestFirst.length > limit && last ? { nextCursor: encodeCursor(last.conversationId) } : {}),
    };
  }
}
