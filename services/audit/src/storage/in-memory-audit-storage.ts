import { InMemoryCheckpointStore } from '@keel/core';
import type { AuditEntry, AuditPageQuery } from '../trail/audit-entry.js';
import { auditSortKey } from '../trail/audit-entry.js';
import type { DayBody, MonthBody, RollupDoc } from '../usage/rollup-documents.js';
import type { AuditStorage, TurnInfo } from './audit-storage.js';

/** Copies through JSON, as the MongoDB adapter stores bodies: no caller shares an object with the store. */
const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** AuditStorage in process memory (dev mode and unit tests). */
export class InMemoryAuditStorage implements AuditStorage {
  readonly checkpoints = new InMemoryCheckpointStore();
  private readonly months = new Map<string, RollupDoc<MonthBody>>();
  private readonly days = new Map<string, RollupDoc<DayBody>>();
  private readonly turns = new Map<string, TurnInfo>();
  private readonly entries = new Map<string, AuditEntry>();

  async loadMonths(ids: readonly string[]): Promise<Map<string, RollupDoc<MonthBody>>> {
    return pick(this.months, ids);
  }

  async loadDays(ids: readonly string[]): Promise<Map<string, RollupDoc<DayBody>>> {
    return pick(this.days, ids);
  }

  async saveMonths(docs: readonly RollupDoc<MonthBody>[]): Promise<void> {
    for (const doc of docs) this.months.set(doc.id, copy(doc));
  }

  async saveDays(docs: readonly RollupDoc<DayBody>[]): Promise<void> {
    for (const doc of docs) this.days.set(doc.id, copy(doc));
  }

  async loadTurns(keys: readonly string[]): Promise<Map<string, TurnInfo>> {
    return pick(this.turns, keys);
  }

  async saveTurns(turns: ReadonlyMap<string, TurnInfo>): Promise<void> {
    for (const [key, info] of turns) this.turns.set(key, { ...this.turns.get(key), ...info });
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<void> {
    for (const entry of entries) if (!this.entries.has(entry.id)) this.entries.set(entry.id, copy(entry));
  }

  async dropConversationText(
    tenantId: string,
    conversationId: string,
    details: readonly string[],
  ): Promise<void> {
    for (const entry of this.entries.values()) {
      if (entry.tenantId !== tenantId || entry.conversationId !== conversationId) continue;
      for (const name of details) delete entry.details[name];
    }
  }

  async pageAudit(query: AuditPageQuery): Promise<AuditEntry[]> {
    return [...this.entries.values()]
      .filter(
        (e) =>
          e.tenantId === query.tenantId &&
          (query.type === undefined || e.type === query.type) &&
          (query.before === undefined || auditSortKey(e) < query.before),
      )
      .sort((a, b) => (auditSortKey(a) < auditSortKey(b) ? 1 : -1))
      .slice(0, query.limit)
      .map(copy);
  }
}

const pick = <V>(map: Map<string, V>, ids: readonly string[]): Map<string, V> => {
  const found = new Map<string, V>();
  for (const id of ids) {
    const value = map.get(id);
    if (value !== undefined) found.set(id, copy(value));
  }
  return found;
};
