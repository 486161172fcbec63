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

/** A claim that finds an expired entry removes it and tries again, at most this many times. */
const CLAIM_ATTEMPTS = 3;

/**
 * The IdempotencyStore shared by every gateway instance: one document per scoped key in
 * `idempotency_keys`. The first insert of a key claims it; the winner then records its response
 * on its own document (by `_id` and claim id). Expired entries are treated as absent and replaced
 * when their key is claimed again.
 */
export class MongoIdempotencyStore implements IdempotencyStore {
  readonly #collection: Collection<IdempotencyDocument>;

  constructor(
    db: Db,
    collectionName = 'idempotency_keys',
    private readonly now: () => number = Date.now,
  ) {
    this.#collection = db.collection<IdempotencyDocument>(collectionName);
  }

  async claim(key: string, fingerprint: string, pendingMs: number): Promise<IdempotencyClaim> {
    for (let attempt = 1; ; attempt++) {
      const claimId = uuidv7();
      try {
        await this.#collection.insertOne({
          _id: key,
          claimId,
          fingerprint,
          expiresAt: new Date(this.now() + pendingMs),
        });
        return { outcome: 'claimed', claimId };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const found = await this.#collection.findOne({ _id: key });
      if (found && found.expiresAt.getTime() > this.now()) {
        return found.response !== undefined
          ? {
              outcome: 'done',
              fingerprint: found.fingerprint,
              response: JSON.parse(found.response) as unknown,
            }
          : { outcome: 'pending', fingerprint: found.fingerprint };
      }
      if (attempt >= CLAIM_ATTEMPTS) {
        throw new Error(`idempotency key could not be claimed after ${CLAIM_ATTEMPTS} attempts`);
      }
      // Expired (or just removed): drop that very entry, then race for the key again.
      if (found) await this.#collection.deleteOne({ _id: key, claimId: found.claimId });
    }
  }

  async complete(key: string, claimId: string, response: unknown, ttlMs: number): Promise<void> {
    await this.#collection.updateOne(
      { _id: key, claimId },
      { $set: { response: JSON.stringify(response), expiresAt: new Date(this.now() + ttlMs) } },
    );
  }

  async release(key: string, claimId: string): Promise<void> {
    await this.#collection.deleteOne({ _id: key, claimId });
  }

  // FerretDB has no TTL indexes: expired entries are swept by the caller now and then.
  async purgeExpired(before: Date): Promise<number> {
    return (await this.#collection.deleteMany({ expiresAt: { $lt: before } })).deletedCount;
  }
}
