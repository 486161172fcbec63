import type { Db } from 'mongodb';
import { uuidv7 } from '../typing/index.js';
import { isDuplicateKey } from './mongo-errors.js';

/** The collection holding the store's one identity document. */
export const STORE_IDENTITY_COLLECTION = 'keel_store';

interface IdentityDocument {
  _id: 'identity';
  storeId: string;
  createdAt: string;
}

/**
 * This database's identity as a Keel store: a random id made on first use and kept in one
 * document, the same for every process on the database. What a bus records to notice that a
 * stream it attaches to holds another store's events.
 */
export const storeIdentity = async (db: Db): Promise<string> => {
  const identities = db.collection<IdentityDocument>(STORE_IDENTITY_COLLECTION);
  // An upsert that only inserts: two processes racing both read the one id that won (FerretDB
  // answers the loser's upsert with a duplicate key error).
  await identities
    .updateOne(
      { _id: 'identity' },
      { $setOnInsert: { storeId: uuidv7(), createdAt: new Date().toISOString() } },
      { upsert: true },
    )
    .catch((error: unknown) => {
      if (!isDuplicateKey(error)) throw error;
    });
  const identity = await identities.findOne({ _id: 'identity' });
  if (!identity) throw new Error('the store identity document vanished');
  return identity.storeId;
};
