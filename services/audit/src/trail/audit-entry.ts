/** One line of a tenant's audit trail: who did what to which target, when, from which request. */
export interface AuditEntry {
  /** The id of the event it records (entries are unique per event). */
  id: string;
  tenantId: string;
  /** ISO-8601 time the event was committed. */
  at: string;
  /** The event type, e.g. `KeyIssued`, `ToolConfigured`, `ApprovalDecided`. */
  type: string;
  /** What it acted on, e.g. `key:<keyId>`, `tool:<name>`, `approval:<approvalId>`. */
  target: string;
  actor: { keyId: string; role: string; userId: string };
  /** The request id (X-Request-Id) that caused it; empty when none was recorded. */
  requestId: string;
  /** The conversation it happened in, when it did. */
  conversationId?: string;
  /** A few non-secret facts of the change (never a key, secret or sealed value). */
  details: Record<string, string>;
}

/** A page request of a tenant's trail: newest first, strictly older than `before` when given. */
export interface AuditPageQuery {
  tenantId: string;
  limit: number;
  /** `at|id` of the last entry of the previous page. */
  before?: string;
  /** Only entries of this event type. */
  type?: string;
}

/** The sort key of an entry: time, then id (ids are unique, so the order is total). */
export const auditSortKey = (entry: Pick<AuditEntry, 'at' | 'id'>): string => `${entry.at}|${entry.id}`;
