import type { Collection, Db } from 'mongodb';
import { MongoServerError } from 'mongodb';
import type { HookLane, HookLaneStore, LaneKey } from './hook-lanes.js';
import { laneId } from './hook-lanes.js';

/**
 * A lane's cursor and lease, written only by the processes that work lanes (claim, renew,
 * advance, failed, release) and inserted once by its first touch.
 */
interface LaneDocument extends Omit<HookLane, 'id' | 'target'> {
  _id: string;
  owner?: string;
  leaseUntil: number;
}

/** "An event at `version` awaits lane `lane`": inserted by a touch, deleted once the cursor passes it. */
interface MarkDocument {
  _id: string;
  lane: string;
  version: number;
}

const DUPLICATE_KEY = 11000;

/** Inserts `document` unless its `_id` is there already (that copy says the same). */
const insertOnce = async <T extends { _id: string }>(collection: Collection<T>, document: T) => {
  try {
    await collection.insertOne(document as never);
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === DUPLICATE_KEY)) throw error;
  }
};

/**
 * Hook lanes in MongoDB: `hook_lanes` (cursor and lease) and `hook_lanes_marks` (the events that
 * await each lane).
 *
 * Invariant: a touch never updates a document, it only inserts. FerretDB (1.24, SQLite and
 * PostgreSQL) applies an update as read, modify, write back the whole document, with no check that
 * the document is unchanged: of two updates of one document at once, one is lost. When the touch
 * raised `target` in the lane document, a lease renewal or release running beside it (a worker
 * holding the lane while its hook is slow to answer) wrote the old target back, the worker then
 * found the lane done and the event waited for the conversation's next one: a delivery lost.
 * Inserts with a unique `_id` are atomic there, so a touch inserts a mark per event and the lane's
 * pending work is "marks above the cursor"; workers delete marks only at or below a cursor they
 * reached. Races among workers (another instance claiming as the lease runs out) can still lose a
 * lease or cursor write: that makes two workers or moves a cursor back, sending an event again
 * under its key (at least once), never skipping one.
 */
export class MongoHookLaneStore implements HookLaneStore {
  readonly #lanes: Collection<LaneDocument>;
  readonly #marks: Collection<MarkDocument>;
  #ready: Promise<unknown> | undefined;

  constructor(db: Db, collectionName = 'hook_lanes') {
    this.#lanes = db.collection<LaneDocument>(collectionName);
    this.#marks = db.collection<MarkDocument>(`${collectionName}_marks`);
  }

  async touch(key: LaneKey, version: number): Promise<void> {
    await this.#init();
    const id = laneId(key);
    // The mark first: a lane opened by a later touch (cursor below that version) still sees it.
    await insertOnce(this.#marks, { _id: `${id}#${version}`, lane: id, version });
    await insertOnce(this.#lanes, {
      _id: id,
      ...key,
      cursor: version - 1,
      attempts: 0,
      retryAt: 0,
      leaseUntil: 0,
    });
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<HookLane[]> {
    await this.#init();
    const targets = new Map<string, number>();
    for (const mark of await this.#marks.find({}).toArray())
      targets.set(mark.lane, Math.max(targets.get(mark.lane) ?? 0, mark.version));
    if (targets.size === 0) return [];
    const due = { _id: { $in: [...targets.keys()] }, retryAt: { $lte: now }, leaseUntil: { $lte: now } };
    const candidates = await this.#lanes.find(due).sort({ retryAt: 1 }).toArray();
    const claimed: HookLane[] = [];
    for (const candidate of candidates) {
      if (claimed.length >= limit) break;
      const target = targets.get(candidate._id) ?? 0;
      // Marks the cursor passed (their delete did not happen: a crash between the two writes).
      if (target <= candidate.cursor) {
        await this.#settleMarks(candidate._id, candidate.cursor);
        continue;
      }
      const lane = await this.#lanes.findOneAndUpdate(
        { _id: candidate._id, leaseUntil: { $lte: now } },
        { $set: { owner, leaseUntil: now + leaseMs } },
        { returnDocument: 'after' },
      );
      if (lane) claimed.push(laneOf(lane, target));
    }
    return claimed;
  }

  async advance(id: string, owner: string, cursor: number): Promise<boolean> {
    await this.#init();
    const moved = await this.#lanes.updateOne(
      { _id: id, owner },
      { $max: { cursor }, $set: { attempts: 0, retryAt: 0 } },
    );
    if (moved.matchedCount === 0) return false;
    await this.#settleMarks(id, cursor);
    return true;
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

  /** Deletes the lane's marks at or below `cursor` (their events are settled); later ones stay. */
  async #settleMarks(id: string, cursor: number): Promise<void> {
    await this.#marks.deleteMany({ lane: id, version: { $lte: cursor } });
  }

  #init(): Promise<unknown> {
    this.#ready ??= this.#marks.createIndex({ lane: 1, version: 1 }).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }
}

const laneOf = (document: LaneDocument, target: number): HookLane => ({
  id: document._id,
  tenantId: document.tenantId,
  hook: document.hook,
  streamName: document.streamName,
  cursor: document.cursor,
  target,
  attempts: document.attempts,
  retryAt: document.retryAt,
});
