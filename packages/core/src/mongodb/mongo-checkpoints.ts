import type { Collection, Db } from 'mongodb';
import type { CheckpointStore, LeaseStore } from '../outbox/index.js';
import { isDuplicateKey } from './mongo-errors.js';

/**
 * Checkpoints of catch-up readers on MongoDB; `$max` keeps them from moving backwards.
 *
 * Not a compare-and-set on FerretDB 1.24, which applies the update as read, then write with no
 * check: of two saves of one name at once the lower can land last, and two first saves at once
 * answer one of them with a duplicate key. Harmless for the callers there are: a reader behind
 * its true position reads a page again (the relay republishes it, deduplicated by `Nats-Msg-Id`
 * and the consumers' inboxes; the audit projection skips what its rollups hold), only one relay
 * or projection saves at a time, and a key's last use (gateway) is off by the two requests' gap.
 */
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

/**
 * Leases on MongoDB built from unique inserts only: one document per time window of `ttlMs`,
 * `_id = <name>|<window>`, so exactly one owner wins each window even where conditional updates
 * are not atomic (FerretDB 1.24 lets several concurrent conditional updates match one document).
 * The holder claims the next window during the second half of its own, so it keeps the lease
 * without a gap; a holder that stops renewing loses it when its window ends.
 *
 * A window's owner, once known here, is remembered: it cannot change until the window ends (the
 * first insert won it), so checks within a window ask the server nothing. The one exception is a
 * release: another process learns of it when the released window ends (at most `ttlMs`), which
 * only delays the next holder after a graceful stop (the leaving holder has drained its work).
 */
export class MongoLeaseStore implements LeaseStore {
  private readonly leases: Collection<{ _id: string; owner: string; until: number }>;
  /** Owners of the windows learned here, by window `_id` (the last few). */
  private readonly owners = new Map<string, string>();

  constructor(db: Db, collectionPrefix = '') {
    this.leases = db.collection(`${collectionPrefix}leases`);
  }

  async tryAcquire(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const window = Math.floor(now / ttlMs);
    const held = (await this.ownerOf(name, window, owner, ttlMs)) === owner;
    if (held && now - window * ttlMs > ttlMs / 2) await this.ownerOf(name, window + 1, owner, ttlMs);
    return held;
  }

  async release(name: string, owner: string): Promise<void> {
    for (const [id, known] of this.owners)
      if (known === owner && id.startsWith(`${name}|`)) this.owners.delete(id);
    await this.leases.deleteMany({ _id: { $regex: `^${escapeRegex(name)}\\|` }, owner });
  }

  /** The owner of a window: remembered, else claimed (or read) and remembered. */
  private async ownerOf(
    name: string,
    window: number,
    owner: string,
    ttlMs: number,
  ): Promise<string | undefined> {
    const id = `${name}|${window}`;
    const known = this.owners.get(id);
    if (known !== undefined) return known;
    const found = await this.claim(name, window, owner, ttlMs);
    if (found === undefined) return undefined;
    this.owners.set(id, found);
    if (this.owners.size > 16) this.owners.delete(this.owners.keys().next().value!);
    return found;
  }

  /** The owner of a window: this one if its insert wins, else whoever's did. */
  private async claim(
    name: string,
    window: number,
    owner: string,
    ttlMs: number,
  ): Promise<string | undefined> {
    const _id = `${name}|${window}`;
    try {
      await this.leases.insertOne({ _id, owner, until: (window + 1) * ttlMs });
      // One winner per window tidies the windows long past.
      await this.leases.deleteMany({
        _id: { $regex: `^${escapeRegex(name)}\\|` },
        until: { $lt: (window - 1) * ttlMs },
      });
      return owner;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await this.leases.findOne({ _id }))?.owner;
    }
  }
}

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
