import { setTimeout as sleep } from 'node:timers/promises';
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
 * "The entry at this version is being replaced by `next`": its `_id` is `<entry _id>@<version>`
 * (`@-` for an entry as created, without one), so exactly one writer moves an entry on from each
 * version. Deleted once the entry is written; `at` tells a taker that died before writing it.
 */
interface MoveDocument {
  _id: string;
  next: ConversationIndexDocument | RemovedDocument;
  at: number;
}

/** How old a move must be before another writer finishes it (its writer died between its two writes). */
const STALE_MOVE_MS = 5_000;
/** Entries whose last version seen here is kept. */
const KNOWN_ENTRIES = 10_000;
/** How long a writer waits for another's move of the same entry before reading it again. */
const MOVE_WAIT_MS = 10;

/**
 * The conversation index on MongoDB or FerretDB 1.24. Recording is a plain insert that the `_id`
 * index lets succeed once (a duplicate key means it is recorded already): FerretDB 1.24 does not
 * apply conditional updates atomically, so no upsert is used. Listing is a range of `_id`s within
 * the tenant's prefix, descending, so MongoDB serves it from the `_id` index.
 *
 * Invariant: an entry only moves to a later version, and a removed entry stays removed. FerretDB
 * 1.24 applies `replaceOne({ _id, version: { $lt: v } }, …)` as read, then write by `_id` with no
 * check between, so of two writers of one entry at once the older version could land last, and an
 * update beside a removal could write the deleted conversation back (four concurrent updates of
 * each of 20 entries left 8 below their latest version, and 10 of 20 removed entries came back,
 * on FerretDB/SQLite; on FerretDB/PostgreSQL the same, when such a burst did not stall it).
 * So an entry is replaced only by the writer whose insert of its move
 * (`<prefix>conversation_index_moves`, keyed by the entry and the version it leaves) won; the
 * others wait for that write and read the entry again. A move older than STALE_MOVE_MS whose
 * entry has not moved is finished by whoever finds it (the same replacement; its writer died):
 * the one window left on FerretDB is two writers finishing one dead writer's move, one of whose
 * replace commands spans the other's write and the next move after it.
 */
export class MongoConversationIndex implements ConversationIndex {
  readonly #entries: Collection<ConversationIndexDocument | RemovedDocument>;
  readonly #moves: Collection<MoveDocument>;
  /** The version of each entry this process wrote or read last (undefined: as created), oldest first. */
  readonly #known = new Map<string, number | undefined>();

  constructor(db: Db, options: { collectionPrefix?: string } = {}) {
    const prefix = options.collectionPrefix ?? '';
    this.#entries = db.collection<ConversationIndexDocument | RemovedDocument>(`${prefix}conversation_index`);
    this.#moves = db.collection<MoveDocument>(`${prefix}conversation_index_moves`);
  }

  async record(entry: IndexedConversation): Promise<void> {
    const document = documentOf(entry);
    try {
      await this.#entries.insertOne(document);
      this.#know(document._id, document.version);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** Leaves the removed key in place of the entry (see RemovedDocument): replaced, or inserted when absent. */
  async remove(tenantId: string, conversationId: string): Promise<void> {
    await this.#write({
      _id: indexKey(tenantId, conversationId),
      tenantId,
      conversationId,
      removed: true,
      version: Number.MAX_SAFE_INTEGER,
    });
  }

  /**
   * Replaces an older entry, or inserts the entry when there is none; an entry at this version or
   * a later one (a redelivery, another instance's faster write, a removal) stays as it is.
   */
  async update(entry: IndexedConversation & { version: number }): Promise<void> {
    await this.#write(documentOf(entry));
  }

  /**
   * Writes `next` unless the entry is at its version or later: inserted when absent, else moved.
   * The first try moves from the version this process last wrote or read, without a read: an entry
   * only moves on, so that is exact or too old, and a move from too old a version matches nothing.
   */
  async #write(next: ConversationIndexDocument | RemovedDocument): Promise<void> {
    const giveUpAt = Date.now() + 2 * STALE_MOVE_MS;
    for (let known = this.#known.has(next._id); ; known = false) {
      const current = known
        ? { _id: next._id, version: this.#known.get(next._id) }
        : await this.#entries.findOne({ _id: next._id });
      this.#know(next._id, current && current.version);
      if (current && current.version !== undefined && current.version >= next.version!) return;
      if (current ? await this.#move(current, next) : await this.#insertAbsent(next)) {
        return this.#know(next._id, next.version);
      }
      if (Date.now() > giveUpAt) throw new Error(`the index entry ${next._id} could not be written`);
    }
  }

  /** Remembers an entry's version as written or read here (null: absent, forgotten). */
  #know(id: string, version: number | undefined | null): void {
    this.#known.delete(id);
    if (version === null) return;
    this.#known.set(id, version);
    if (this.#known.size > KNOWN_ENTRIES) this.#known.delete(this.#known.keys().next().value!);
  }

  /** Inserts `next` where no entry was found; false when one was inserted meanwhile. */
  async #insertAbsent(next: ConversationIndexDocument | RemovedDocument): Promise<boolean> {
    try {
      await this.#entries.insertOne(next);
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return false;
    }
  }

  /**
   * Moves the entry from `current` to `next` if this writer wins that move; false when another
   * writer holds it (waited for, or finished here once stale) or the entry changed: read again.
   */
  async #move(
    current: { _id: string; version?: number | undefined },
    next: ConversationIndexDocument | RemovedDocument,
  ): Promise<boolean> {
    const _id = `${current._id}@${current.version ?? '-'}`;
    const at = current.version === undefined ? { $exists: false } : current.version;
    try {
      await this.#moves.insertOne({ _id, next, at: Date.now() });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const held = await this.#moves.findOne({ _id });
      if (!held) return false;
      if (Date.now() - held.at < STALE_MOVE_MS) return sleep(MOVE_WAIT_MS).then(() => false);
      await this.#entries.replaceOne({ _id: current._id, version: at }, held.next);
      await this.#moves.deleteOne({ _id });
      return false;
    }
    const moved = await this.#entries.replaceOne({ _id: current._id, version: at }, next);
    // Once the entry has left `current`, a late insert of this move matches no entry: safe to drop.
    await this.#moves.deleteOne({ _id });
    return moved.matchedCount > 0;
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
