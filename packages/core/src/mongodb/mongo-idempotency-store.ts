import { setTimeout as sleep } from 'node:timers/promises';
import type { Collection, Db } from 'mongodb';
import type { IdempotencyClaim, IdempotencyStore } from '../idempotency/idempotency-store.js';
import { uuidv7 } from '../typing/index.js';
import { isDuplicateKey } from './mongo-errors.js';

interface IdempotencyDocument {
  /** The scoped key: the unique `_id` insert is what decides who claims it (atomic on FerretDB too). */
  _id: string;
  /** Names this claim, so only its own request completes or releases it. */
  claimId: string;
  fingerprint: string;
  /** The recorded response as JSON text (a body may hold keys a document cannot); absent while pending. */
  response?: string;
  /** After this the entry counts as absent. */
  expiresAt: Date;
}

/** A claim that finds an expired entry takes it over and tries again, at most this many times. */
const CLAIM_ATTEMPTS = 3;
/** How long a claim waits for a release or purge that holds an entry's takeover to delete it. */
const REMOVAL_WAIT_MS = 20;

/**
 * "Claim `claimId` of this key is being replaced or removed, by this one writer": its `_id` is
 * `<key>|<claimId>`, so exactly one insert of it succeeds. A claim that takes over an expired entry
 * writes its fingerprint; a release or a purge none.
 */
interface TakeoverDocument {
  _id: string;
  fingerprint?: string;
  at: Date;
}

/**
 * The IdempotencyStore shared by every gateway instance: one document per scoped key in
 * `idempotency_keys`. The first insert of a key claims it; the winner then records its response
 * on its own document (by `_id` and claim id). Expired entries are treated as absent and replaced
 * when their key is claimed again.
 *
 * Invariant: a key is claimed by one request at a time, also when its entry has expired. FerretDB
 * 1.24 applies a conditional update or delete as read, then write by `_id` with no check between:
 * `deleteOne({ _id, claimId })` of an expired entry can delete the claim another request inserted
 * after the read, and the deleter then inserts its own: both do the work (two of twelve concurrent
 * claims of an expired key won in 4–6 of 80 rounds on FerretDB/PostgreSQL). So an entry is replaced or deleted
 * only by the writer whose insert of its takeover (`<collection>_takeovers`, `<key>|<claimId>`)
 * succeeded: claims of an expired entry, releases and purges all race for that one insert, and no
 * one else writes the entry meanwhile. `complete` stays a conditional update: it races only the
 * takeover of its own claim, expired by then. Where the late `complete` lands last, the key
 * answers that first request's response and the taker's own `complete` finds no claim of its own
 * (a no-op): one of the key's real responses, and no third request can claim the key.
 */
export class MongoIdempotencyStore implements IdempotencyStore {
  readonly #collection: Collection<IdempotencyDocument>;
  readonly #takeovers: Collection<TakeoverDocument>;

  constructor(
    db: Db,
    collectionName = 'idempotency_keys',
    private readonly now: () => number = Date.now,
  ) {
    this.#collection = db.collection<IdempotencyDocument>(collectionName);
    this.#takeovers = db.collection<TakeoverDocument>(`${collectionName}_takeovers`);
  }

  async claim(key: string, fingerprint: string, pendingMs: number): Promise<IdempotencyClaim> {
    for (let attempt = 1; ; attempt++) {
      const entry: IdempotencyDocument = {
        _id: key,
        claimId: uuidv7(),
        fingerprint,
        expiresAt: new Date(this.now() + pendingMs),
      };
      try {
        await this.#collection.insertOne(entry);
        return { outcome: 'claimed', claimId: entry.claimId };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const found = await this.#collection.findOne({ _id: key });
      if (found && found.expiresAt.getTime() > this.now()) return heldBy(found);
      if (attempt >= CLAIM_ATTEMPTS) {
        throw new Error(`idempotency key could not be claimed after ${CLAIM_ATTEMPTS} attempts`);
      }
      // Just removed: insert again. Expired: replace it, if this claim wins its takeover.
      if (!found) continue;
      const taker = await this.#takeOver(key, found.claimId, fingerprint);
      if (taker === undefined) {
        if ((await this.#collection.replaceOne({ _id: key, claimId: found.claimId }, entry)).matchedCount > 0)
          return { outcome: 'claimed', claimId: entry.claimId };
      } else if (taker.fingerprint !== undefined) {
        return { outcome: 'pending', fingerprint: taker.fingerprint };
      } else {
        await sleep(REMOVAL_WAIT_MS);
      }
    }
  }

  async complete(key: string, claimId: string, response: unknown, ttlMs: number): Promise<void> {
    await this.#collection.updateOne(
      { _id: key, claimId },
      { $set: { response: JSON.stringify(response), expiresAt: new Date(this.now() + ttlMs) } },
    );
  }

  async release(key: string, claimId: string): Promise<void> {
    // Taken over already: the key belongs to the claim that took it.
    if ((await this.#takeOver(key, claimId)) === undefined)
      await this.#collection.deleteOne({ _id: key, claimId });
  }

  // FerretDB has no TTL indexes: expired entries are swept by the caller now and then.
  async purgeExpired(before: Date): Promise<number> {
    const expired = await this.#collection
      .find({ expiresAt: { $lt: before } }, { projection: { claimId: 1 } })
      .toArray();
    let purged = 0;
    for (let i = 0; i < expired.length; i += PURGE_BATCH) {
      const deleted = await Promise.all(
        expired
          .slice(i, i + PURGE_BATCH)
          .map(async ({ _id, claimId }) =>
            (await this.#takeOver(_id, claimId)) === undefined
              ? (await this.#collection.deleteOne({ _id, claimId })).deletedCount
              : 0,
          ),
      );
      purged += deleted.reduce((sum, n) => sum + n, 0);
    }
    // Takeovers matter while a stale read of their claim may still act on it (a request's lifetime).
    await this.#takeovers.deleteMany({ at: { $lt: before } });
    return purged;
  }

  /**
   * Undefined when this call won the takeover of claim `claimId` of `key` (it alone may replace or
   * delete that entry now); else the takeover that won (its fingerprint: a claim's).
   */
  async #takeOver(key: string, claimId: string, fingerprint?: string): Promise<TakeoverDocument | undefined> {
    const _id = `${key}|${claimId}`;
    try {
      await this.#takeovers.insertOne({
        _id,
        ...(fingerprint === undefined ? {} : { fingerprint }),
        at: new Date(this.now()),
      });
      return undefined;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    return (await this.#takeovers.findOne({ _id })) ?? { _id, at: new Date(this.now()) };
  }
}

/** Expired entries a purge takes over and deletes at once. */
const PURGE_BATCH = 50;

/** What a claim answers for a live entry another request holds. */
const heldBy = (found: IdempotencyDocument): IdempotencyClaim =>
  found.response !== undefined
    ? { outcome: 'done', fingerprint: found.fingerprint, response: JSON.parse(found.response) as unknown }
    : { outcome: 'pending', fingerprint: found.fingerprint };
