import { MongoServerError } from 'mongodb';

/** True when MongoDB (or FerretDB) refused a write because of a unique index. */
export const isDuplicateKey = (error: unknown): boolean =>
  error instanceof MongoServerError && (error.code === 11000 || error.code === 11001);
