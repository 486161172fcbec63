import type { Collection, Document, IndexDescription } from 'mongodb';

/**
 * Creates indexes one by one. FerretDB 1.24 drops the connection on a multi-index
 * `createIndexes` whose indexes already exist, so a batch would fail on every restart.
 */
export const ensureIndexes = async <T extends Document>(
  collection: Collection<T>,
  indexes: IndexDescription[],
): Promise<void> => {
  for (const { key, ...options } of indexes) await collection.createIndex(key, options);
};
