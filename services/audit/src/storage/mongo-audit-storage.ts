import { ensureIndexes, isDuplicateKey, MongoCheckpointStore } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';
import type { AuditEntry, AuditPageQuery } from '../trail/audit-entry.js';
import { auditSortKey } from '../trail/audit-entry.js';
import type { DayBody, MonthBody, RollupDoc } from '../usage/rollup-documents.js';
import type { AuditStorage, TurnInfo } from './audit-storage.js';

/** A rollup as stored: the body as JSON text (any user or model id is a safe key there). */
interface RollupDocument {
  _id: string;
  tenantId: string;
  pos: number;
  body: string;
}

/** A turn's user and agent, by `tenantId|turnId`. */
interface TurnDocument {
  _id: string;
  user?: string;
  agent?: string;
}

/** An audit entry as stored; `sk` (time|id) orders a tenant's trail. */
interface AuditDocument extends Omit<AuditEntry, 'id'> {
  _id: string;
  sk: string;
}

/** Collection name prefix of everything the audit service stores. */
export const AUDIT_COLLECTION_PREFIX = 'audit_';

/**
 * AuditStorage on MongoDB / FerretDB. Rollups are read by `_id` only (the one lookup FerretDB
 * 1.24 serves from an index); writes are whole-document replaces by one writer at a time (the
 * projection), so no conditional update is relied on; the trail and turn index are insert/merge
 * by `_id`, idempotent.
 */
export class MongoAuditStorage implements AuditStorage {
  readonly checkpoints: MongoCheckpointStore;
  private readonly months: Collection<RollupDocument>;
  private readonly days: Collection<RollupDocument>;
  private readonly turns: Collection<TurnDocument>;
  private readonly trail: Collection<AuditDocument>;

  constructor(db: Db, prefix = AUDIT_COLLECTION_PREFIX) {
    this.checkpoints = new MongoCheckpointStore(db, prefix);
    this.months = db.collection(`${prefix}usage_months`);
    this.days = db.collection(`${prefix}usage_days`);
    this.turns = db.collection(`${prefix}usage_turns`);
    this.trail = db.collection(`${prefix}trail`);
  }

  /** Creates the trail's index (a tenant's entries by time), one at a time as FerretDB needs. */
  async init(): Promise<void> {
    await ensureIndexes(this.trail, [{ key: { tenantId: 1, sk: -1 }, name: 'tenant_sk' }]);
  }

  loadMonths(ids: readonly string[]): Promise<Map<string, RollupDoc<MonthBody>>> {
    return loadRollups<MonthBody>(this.months, ids);
  }

  loadDays(ids: readonly string[]): Promise<Map<string, RollupDoc<DayBody>>> {
    return loadRollups<DayBody>(this.days, ids);
  }

  saveMonths(docs: readonly RollupDoc<MonthBody>[]): Promise<void> {
    return saveRollups(this.months, docs);
  }

  saveDays(docs: readonly RollupDoc<DayBody>[]): Promise<void> {
    return saveRollups(this.days, docs);
  }

  async loadTurns(keys: readonly string[]): Promise<Map<string, TurnInfo>> {
    const found = new Map<string, TurnInfo>();
    for (let i = 0; i < keys.length; i += 1000) {
      const docs = await this.turns.find({ _id: { $in: keys.slice(i, i + 1000) } }).toArray();
      for (const { _id, ...info } of docs) found.set(_id, info);
    }
    return found;
  }

  async saveTurns(turns: ReadonlyMap<string, TurnInfo>): Promise<void> {
    if (turns.size === 0) return;
    await this.turns.bulkWrite(
      [...turns].map(([key, info]) => ({
        updateOne: { filter: { _id: key }, update: { $set: info }, upsert: true },
      })),
      { ordered: false },
    );
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    try {
      await this.trail.insertMany(
        entries.map(({ id, ...entry }) => ({ _id: id, sk: auditSortKey({ id, at: entry.at }), ...entry })),
        { ordered: false },
      );
    } catch (error) {
      // Entries written before (a page applied again) are duplicates: the rest went in.
      const writeErrors = (error as { writeErrors?: unknown[] }).writeErrors;
      const all = Array.isArray(writeErrors) ? writeErrors : [error];
      if (!all.every((e) => isDuplicateKey(e) || (e as { code?: number }).code === 11000)) throw error;
    }
  }

  async dropConversationText(
    tenantId: string,
    conversationId: string,
    details: readonly string[],
  ): Promise<void> {
    if (details.length === 0) return;
    const unset = Object.fromEntries(details.map((name) => [`details.${name}`, '' as const]));
    await this.trail.updateMany({ tenantId, conversationId }, { $unset: unset });
  }

  async pageAudit(query: AuditPageQuery): Promise<AuditEntry[]> {
    const docs = await this.trail
      .find({
        tenantId: query.tenantId,
        ...(query.type === undefined ? {} : { type: query.type }),
        ...(query.before === undefined ? {} : { sk: { $lt: query.before } }),
      })
      .sort({ sk: -1 })
      .limit(query.limit)
      .toArray();
    return docs.map(({ _id, sk: _sk, ...entry }) => ({ id: _id, ...entry }));
  }
}

const loadRollups = async <B>(
  collection: Collection<RollupDocument>,
  ids: readonly string[],
): Promise<Map<string, RollupDoc<B>>> => {
  const docs = await Promise.all(ids.map((id) => collection.findOne({ _id: id })));
  const found = new Map<string, RollupDoc<B>>();
  for (const doc of docs) {
    if (doc)
      found.set(doc._id, {
        id: doc._id,
        tenantId: doc.tenantId,
        pos: doc.pos,
        body: JSON.parse(doc.body) as B,
      });
  }
  return found;
};

const saveRollups = async <B>(
  collection: Collection<RollupDocument>,
  docs: readonly RollupDoc<B>[],
): Promise<void> => {
  if (docs.length === 0) return;
  await collection.bulkWrite(
    docs.map((doc) => ({
      replaceOne: {
        filter: { _id: doc.id },
        replacement: { tenantId: doc.tenantId, pos: doc.pos, body: JSON.stringify(doc.body) },
        upsert: true,
      },
    })),
    { ordered: false },
  );
};
