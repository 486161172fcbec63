import type { CheckpointStore } from '@keel/core';
import type { AuditEntry, AuditPageQuery } from '../trail/audit-entry.js';
import type { DayBody, MonthBody, RollupDoc } from '../usage/rollup-documents.js';

/** Who acted in a turn and with which agent: fixed once the turn exists, so safe to cache anywhere. */
export interface TurnInfo {
  user?: string;
  agent?: string;
}

/**
 * Where the audit service keeps what it derives from the log: usage rollups, the turn index
 * the rollups need, the audit trail, and the projection's checkpoint. MongoDB in production,
 * memory in dev mode; both behave the same.
 */
export interface AuditStorage {
  readonly checkpoints: CheckpointStore;
  loadMonths(ids: readonly string[]): Promise<Map<string, RollupDoc<MonthBody>>>;
  loadDays(ids: readonly string[]): Promise<Map<string, RollupDoc<DayBody>>>;
  /** Replaces (or creates) the documents. */
  saveMonths(docs: readonly RollupDoc<MonthBody>[]): Promise<void>;
  saveDays(docs: readonly RollupDoc<DayBody>[]): Promise<void>;
  /** Turn infos by `tenantId|turnId`. */
  loadTurns(keys: readonly string[]): Promise<Map<string, TurnInfo>>;
  /** Merges the fields given into each turn's info (the same fields always get the same values). */
  saveTurns(turns: ReadonlyMap<string, TurnInfo>): Promise<void>;
  /** Inserts the entries; one already there (same id) is left as it is. */
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  /**
   * Removes the named free-text `details` (an approval's reason) from a conversation's entries:
   * what a deleted conversation's entries keep is who, when and what. Idempotent.
   */
  dropConversationText(tenantId: string, conversationId: string, details: readonly string[]): Promise<void>;
  /** A tenant's entries, newest first. */
  pageAudit(query: AuditPageQuery): Promise<AuditEntry[]>;
}
