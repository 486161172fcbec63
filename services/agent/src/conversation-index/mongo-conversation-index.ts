import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';
import type { ConversationIndex, ConversationPage, IndexedConversation } from './conversation-index.js';
import { decodeCursor, encodeCursor, indexKey, pageSize } from './conversation-index.js';

/** One indexed conversation in `<prefix>conversation_index`. Written once, never updated. */
export interface ConversationIndexDocument {
  /** `${tenantId}|${conversationId}`: the primary key makes `record` insert-if-absent. */
  _id: string;
  tenantId: string;
  conversationId: string;
  agentId: string;
  title?: string;
  createdAt: string;
}

/**
 * The conversation index on MongoDB or FerretDB 1.24. Recording is a plain insert that the `_id`
 * index lets succeed once (a duplicate key means it is recorded already): FerretDB 1.24 does not
 * apply conditional updates atomically, so no upsert is used. Listing is a range of `_id`s within
 * the tenant's prefix, descending, so MongoDB serves it from the `_id` index.
 */
export class MongoConversationIndex implements ConversationIndex {
  readonly #entries: Collection<ConversationIndexDocument>;

  constructor(db: Db, options: { collectionPrefix?: string } = {}) {
    this.#entries = db.collection<ConversationIndexDocument>(
      `${options.collectionPrefix ?? ''}conversation_index`,
    );
  }

  async record(entry: IndexedConversation): Promise<void> {
    try {
      await this.#entries.insertOne({
        _id: indexKey(entry.tenantId, entry.conversationId),
        tenantId: entry.tenantId,
        conversationId: entry.conversationId,
        agentId: entry.agentId,
        ...(entry.title ? { title: entry.title } : {}),
        createdAt: entry.createdAt,
      });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async list(tenantId: string, page: { limit?: number; cursor?: string } = {}): Promise<ConversationPage> {
    const limit = pageSize(page.limit);
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    // `}` follows `|`: every key of the tenant sorts below `${tenantId}}`.
    const upper = before === undefined ? `${tenantId}}` : indexKey(tenantId, before);
    const documents = await this.#entries
      .find({ _id: { $gt: `${tenantId}|`, $lt: upper }, tenantId })
      .sort({ _id: -1 })
      .limit(limit + 1)
      .toArray();
    const conversations = documents.slice(0, limit).map((d): IndexedConversation => ({
      tenantId: d.tenantId,
      conversationId: d.conversationId,
      agentId: d.agentId,
      ...(d.title ? { title: d.title } : {}),
      createdAt: d.createdAt,
    }));
    const last = conversations.at(-1);
    return {
      conversations,
      ...(documents.length > limit && last ? { nextCursor: encodeCursor(last.conversationId) } : {}),
    };
  }
}
