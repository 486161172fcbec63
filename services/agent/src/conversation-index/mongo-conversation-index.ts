import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db, Filter } from 'mongodb';
import type {
  ConversationFilter,
  ConversationIndex,
  ConversationPage,
  IndexedConversation,
} from './conversation-index.js';
import { decodeCursor, encodeCursor, indexKey, pageSize } from './conversation-index.js';

/**
 * One indexed conversation in `<prefix>conversation_index`: inserted once, then set to later
 * versions of the conversation (title, metadata, status) by `update`.
 */
export interface ConversationIndexDocument {
  /** `${tenantId}|${conversationId}`: the primary key makes `record` insert-if-absent. */
  _id: string;
  tenantId: string;
  conversationId: string;
  agentId: string;
  title?: string;
  createdAt: string;
  userId?: string;
  metadata?: Record<string, string>;
  status?: string;
  /** The conversation version the document reflects; absent: as created. */
  version?: number;
}

/**
 * What `remove` leaves of a deleted conversation: its key alone (no title, no metadata), at a
 * version no update reaches, so a late write for it (another instance's delayed update, a
 * redelivered creation) finds the key taken and changes nothing.
 */
interface RemovedDocument {
  _id: string;
  tenantId: string;
  conversationId: string;
  removed: true;
  version: number;
}

/** The document of an entry, without its absent fields. */
const documentOf = (entry: IndexedConversation): ConversationIndexDocument => ({
  _id: indexKey(entry.tenantId, entry.conversationId),
  tenantId: entry.tenantId,
  conversationId: entry.conversationId,
  agentId: entry.agentId,
  ...(entry.title ? { title: entry.title } : {}),
  createdAt: entry.createdAt,
  ...(entry.userId ? { userId: entry.userId } : {}),
  ...(entry.metadata && Object.keys(entry.metadata).length > 0 ? { metadata: entry.metadata } : {}),
  ...(entry.status ? { status: entry.status } : {}),
  ...(entry.version === undefined ? {} : { version: entry.version }),
});

/** The query of a filter; metadata keys are checked words (`[A-Za-z0-9_-]`), safe as paths. */
const queryOf = (filter: ConversationFilter): Filter<ConversationIndexDocument> =>
  ({
    ...(filter.agentId === undefined ? {} : { agentId: filter.agentId }),
    ...(filter.userId === undefined ? {} : { userId: filter.userId }),
    ...(filter.status === undefined
      ? {}
      : filter.status === 'idle'
        ? { status: { $in: ['idle', null] } }
        : { status: filter.status }),
    ...Object.fromEntries(Object.entries(filter.metadata ?? {}).map(([k, v]) => [`metadata.${k}`, v])),
  }) as Filter<ConversationIndexDocument>;

/**
 * The conversation index on MongoDB or FerretDB 1.24. Recording is a plain insert that the `_id`
 * index lets succeed once (a duplicate key means it is recorded already): FerretDB 1.24 does not
 * apply conditional updates atomically, so no upsert is used. Listing is a range of `_id`s within
 * the tenant's prefix, descending, so MongoDB serves it from the `_id` index.
 */
export class MongoConversationIndex implements ConversationIndex {
  readonly #entries: Collection<ConversationIndexDocument | RemovedDocument>;

  constructor(db: Db, options: { collectionPrefix?: string } = {}) {
    this.#entries = db.collection<ConversationIndexDocument | RemovedDocument>(
      `${options.collectionPrefix ?? ''}conversation_index`,
    );
  }

  async record(entry: IndexedConversation): Promise<void> {
    try {
      await this.#entries.insertOne(documentOf(entry));
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** Leaves the removed key in place of the entry (see RemovedDocument): replaced, or inserted when absent. */
  async remove(tenantId: string, conversationId: string): Promise<void> {
    const _id = indexKey(tenantId, conversationId);
    const removed: RemovedDocument = {
      _id,
      tenantId,
      conversationId,
      removed: true,
      version: Number.MAX_SAFE_INTEGER,
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      if ((await this.#entries.replaceOne({ _id }, removed)).matchedCount > 0) return;
      try {
        await this.#entries.insertOne(removed);
        return;
      } catch (error) {
        // Recorded meanwhile: replace that entry.
        if (!isDuplicateKey(error)) throw error;
      }
    }
  }

  /**
   * Replaces an older entry, or inserts the entry when there is none: the filter on `version`
   * makes a late update (a redelivery, another instance's slower write) change nothing. One round
   * trip when the entry exists (the common case: created with its conversation); when the
   * replace matches nothing, the insert tells an absent entry (inserted) from a newer one (a
   * duplicate key: nothing to do).
   */
  async update(entry: IndexedConversation & { version: number }): Promise<void> {
    const document = documentOf(entry);
    const replaced = await this.#entries.replaceOne(
      { _id: document._id, $or: [{ version: { $lt: entry.version } }, { version: { $exists: false } }] },
      document,
    );
    if (replaced.matchedCount > 0) return;
    try {
      await this.#entries.insertOne(document);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  async list(
    tenantId: string,
    page: { limit?: number; cursor?: string } = {},
    filter: ConversationFilter = {},
  ): Promise<ConversationPage> {
    const limit = pageSize(page.limit);
    const before = page.cursor ? decodeCursor(page.cursor) : undefined;
    // `}` follows `|`: every key of the tenant sorts below `${tenantId}}`.
    const upper = before === undefined ? `${tenantId}}` : indexKey(tenantId, before);
    const documents = await this.#entries
      .find({
        _id: { $gt: `${tenantId}|`, $lt: upper },
        tenantId,
        removed: { $exists: false },
        ...queryOf(filter),
      } as Filter<ConversationIndexDocument | RemovedDocument>)
      .sort({ _id: -1 })
      .limit(limit + 1)
      .toArray();
    const conversations = (documents as ConversationIndexDocument[])
      .slice(0, limit)
      .map(({ _id, ...entry }): IndexedConversation => entry);
    const last = conversations.at(-1);
    return {
      conversations,
      ...(documents.length > limit && last ? { nextCursor: encodeCursor(last.conversationId) } : {}),
    };
  }
}
