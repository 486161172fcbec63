import type { Collection, Db } from 'mongodb';
import { MongoServerError } from 'mongodb';
import type { HookLane, HookLaneStore, LaneKey } from './hook-lanes.js';
import { laneId } from './hook-lanes.js';

interface LaneDocument extends Omit<HookLane, 'id'> {
  _id: string;
  /** True while the cursor may be below the target: what `claim` looks for (no `$expr` needed). */
  pending: boolean;
  owner?: string;
  leaseUntil: number;
}

const DUPLICATE_KEY = 11000;

/** Hook lanes in MongoDB (`hook_lanes`), beside the event log. */
export class MongoHookLaneStore implements HookLaneStore {
  readonly #lanes: Collection<LaneDocument>;
  #ready: Promise<unknown> | undefined;

  constructor(db: Db, collectionName = 'hook_lanes') {
    this.#lanes = db.collection<LaneDocument>(collectionName);
  }

  async touch(key: LaneKey, version: number): Promise<void> {
    await this.#init();
    const update = () =>
      this.#lanes.updateOne(
        { _id: laneId(key) },
        {
          $setOnInsert: { ...key, cursor: version - 1, attempts: 0, retryAt: 0, leaseUntil: 0 },
          $max: { target: version },
          $set: { pending: true },
        },
        { upsert: true },
      );
    try {
      await update();
    } catch (error) {
      // Two first events of one lane at once: the other insert won; this one updates it.
      if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
      await update();
    }
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<HookLane[]> {
    await this.#init();
    const due = { pending: true, retryAt: { $lte: now }, leaseUntil: { $lte: now } };
    const candidates = await this.#lanes.find(due).sort({ retryAt: 1 }).limit(limit).toArray();
    const claimed: HookLane[] = [];
    for (const candidate of candidates) {
      const lane = await this.#lanes.findOneAndUpdate(
        { _id: candidate._id, leaseUntil: { $lte: now } },
        { $set: { owner, leaseUntil: now + leaseMs } },
        { returnDocument: 'after' },
      );
      if (lane) claimed.push(laneOf(lane));
    }
    return claimed;
  }

  async advance(id: string, owner: string, cursor: number): Promise<boolean> {
    await this.#init();
    const settled = { attempts: 0, retryAt: 0 };
    // Caught up: no longer pending, unless a touch raised the target meanwhile (then the first filter misses).
    const done = await this.#lanes.updateOne(
      { _id: id, owner, target: { $lte: cursor } },
      { $max: { cursor }, $set: { ...settled, pending: false } },
    );
    if (done.matchedCount > 0) return true;
    const moved = await this.#lanes.updateOne({ _id: id, owner }, { $max: { cursor }, $set: settled });
    return moved.matchedCount > 0;
  }

  async failed(
    id: string,
    owner: string,
    cursor: number,
    attempts: number,
    retryAt: number,
  ): Promise<boolean> {
    await this.#init();
    const result = await this.#lanes.updateOne(
      { _id: id, owner },
      { $max: { cursor }, $set: { attempts, retryAt } },
    );
    return result.matchedCount > 0;
  }

  async renew(id: string, owner: string, until: number): Promise<boolean> {
    await this.#init();
    const result = await this.#lanes.updateOne({ _id: id, owner }, { $set: { leaseUntil: until } });
    return result.matchedCount > 0;
  }

  async release(id: string, owner: string): Promise<void> {
    await this.#init();
    await this.#lanes.updateOne({ _id: id, owner }, { $set: { leaseUntil: 0 }, $unset: { owner: '' } });
  }

  #init(): Promise<unknown> {
    this.#ready ??= this.#lanes.createIndex({ pending: 1, retryAt: 1 }).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }
}

const laneOf = (document: LaneDocument): HookLane => ({
  id: document._id,
  tenantId: document.tenantId,
  hook: document.hook,
  streamName: document.streamName,
  cursor: document.cursor,
  target: document.target,
  attempts: document.attempts,
  retryAt: document.retryAt,
});
