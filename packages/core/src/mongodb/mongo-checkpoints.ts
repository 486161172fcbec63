import type { Collection, Db } from 'mongodb';
import type { CheckpointStore, LeaseStore } from '../outbox/index.js';
import { isDuplicateKey } from './mongo-errors.js';

/** Checkpoints of catch-up readers on MongoDB; `$max` keeps them from moving backwards. */
export class MongoCheckpointStore implements CheckpointStore {
  private readonly checkpoints: Collection<{ _id: string; position: number }>;

  constructor(db: Db, collectionPrefix = '') {
    this.checkpoints = db.collection(`${collectionPrefix}checkpoints`);
  }

  async load(name: string): Promise<number> {
    return (await this.checkpoints.findOne({ _id: name }))?.position ?? 0;
  }

  async save(name: string, position: number): Promise<void> {
    await this.checkpoints.updateOne({ _id: name }, { $max: { position } }, { upsert: true });
  }
}

/** Leases on MongoDB: one conditional update, so two processes cannot both take a live lease. */
export class MongoLeaseStore implements LeaseStore {
  private readonly leases: Collection<{ _id: string; owner: string; until: number }>;

  constructor(db: Db, collectionPrefix = '') {
    this.leases = db.collection(`${collectionPrefix}leases`);
  }

  async tryAcquire(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const taken = await this.leases.updateOne(
      { _id: name, $or: [{ owner }, { until: { $lt: now } }] },
      { $set: { owner, until: now + ttlMs } },
    );
    if (taken.matchedCount === 1) return true;
    try {
      await this.leases.insertOne({ _id: name, owner, until: now + ttlMs });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async release(name: string, owner: string): Promise<void> {
    await this.leases.deleteOne({ _id: name, owner });
  }
}
