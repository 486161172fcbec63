import type {
  ConversationFilter,
  ConversationIndex,
  ConversationPage,
  IndexedConversation,
} from './conversation-index.js';
import { decodeCursor, encodeCursor, indexKey, matches, pageSize } from './conversation-index.js';

/** The conversation index in memory (dev mode and tests). */
export class InMemoryConversationIndex implements ConversationIndex {
  readonly #entries = new Map<string, IndexedConversation>();
  /** Keys of removed conversations: a late record or update of one changes nothing. */
  readonly #removed = new Set<string>();

  record(entry: IndexedConversation): Promise<void> {
    const key = indexKey(entry.tenantId, entry.conversationId);
    if (!this.#entries.has(key) && !this.#removed.has(key)) this.#entries.set(key, { ...entry });
    return Promise.resolve();
  }

  remove(tenantId: string, conversationId: string): Promise<void> {
    const key = indexKey(tenantId, conversationId);
    this.#entries.delete(key);
    this.#removed.add(key);
    return Promise.resolve();
  }

  update(entry: IndexedConversation & { version: number }): Promise<void> {
    const key = indexKey(entry.tenantId, entry.conversationId);
    if (this.#removed.has(key)) return Promise.resolve();
    const known = this.#entries.get(key);
    if (!known || (known.version ?? 0) < entry.version) this.#entries.set(key, { ...entry });
    return Promise.resolve();
  }

  list(
    tenantId: string,
    page: { limit?: number; cursor?: string } = {},
    filter: ConversationFilter = {},
  ): Promise<ConversationPage> {
    try {
      return Promise.resolve(this.#page(tenantId, page, filter));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  #page(
    tenantId: string,
    page: { limit?: number; cursor?: string },
    filter: ConversationFilter,
  ): ConversationPage {
    const limit = pageSize(page.limit);
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    const newestFirst = [...this.#entries.values()]
      .filter((e) => e.tenantId === tenantId && (before === undefined || e.conversationId < before))
      .filter((e) => matches(e, filter))
      .sort((a, b) => (a.conversationId < b.conversationId ? 1 : -1));
    const conversations = newestFirst.slice(0, limit).map((e) => ({ ...e }));
    const last = conversations.at(-1);
    return {
      conversations,
      ...(newestFirst.length > limit && last ? { nextCursor: encodeCursor(last.conversationId) } : {}),
    };
  }
}
