import { MongoEventStore } from '@keel/core/mongodb';
import type { Infrastructure } from '@keel/runtime';
import type { AuditStorage } from './audit-storage.js';
import { InMemoryAuditStorage } from './in-memory-audit-storage.js';
import { MongoAuditStorage } from './mongo-audit-storage.js';

/** Nest injection token of the AuditStorage. */
export const AUDIT_STORAGE = Symbol.for('keel.audit.storage');

/** The storage next to the event log: MongoDB when the log is, else in memory (dev mode). */
export const auditStorageFor = async (infra: Infrastructure): Promise<AuditStorage> => {
  if (!(infra.store instanceof MongoEventStore)) return new InMemoryAuditStorage();
  const storage = new MongoAuditStorage(infra.store.db);
  await storage.init();
  return storage;
};
