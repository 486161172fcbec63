import { ValidationError } from '@keel/core';

/** One conversation as the tenant's list shows and filters it. */
export interface IndexedConversation {
  tenantId: string;
  conversationId: string;
  agentId: string;
  title?: string;
  createdAt: string;
  /** The acting user who created it. */
  userId?: string;
  metadata?: Record<string, string>;
  /** Its status as of `version` (absent: idle, as created). */
  status?: string;
  /** The conversation version this entry reflects (absent: as created). */
  version?: number;
}

/** What a list keeps: every given field must match (`metadata`: each key with that value). */
export interface ConversationFilter {
  agentId?: string;
  userId?: string;
  status?: string;
  metadata?: Record<string, string>;
}

/** Whether an entry passes a filter (the in-memory index; the Mongo one asks the same of its query). */
export const matches = (entry: IndexedConversation, filter: ConversationFilter = {}): boolean =>
  (filter.agentId === undefined || entry.agentId === filter.agentId) &&
  (filter.userId === undefined || entry.userId === filter.userId) &&
  (filter.status === undefined || (entry.status ?? 'idle') === filter.status) &&
  Object.entries(filter.metadata ?? {}).every(
    ([key, value]) =>
      entry.metadata !== undefined && Object.hasOwn(entry.metadata, key) && entry.metadata[key] === value,
  );

/** A page of a tenant's conversations, newest first; `nextCursor` is absent on the last page. */
export interface ConversationPage {
  conversations: IndexedConversation[];
  nextCursor?: string;
}

/** Page size when the caller names none. */
export const DEFAULT_PAGE_SIZE = 20;
/** Largest page size. */
export const MAX_PAGE_SIZE = 100;

/**
 * The per-tenant list of conversations (`GET /v1/conversations`): a projection of
 * `ConversationCreated`, so the event log stays the source of truth and the index can be rebuilt.
 */
export interface ConversationIndex {
  /** Adds a conversation unless it is there already: recording twice is harmless. */
  record(entry: IndexedConversation): Promise<void>;
  /**
   * Sets the entry to the conversation as of `entry.version` (adding it when absent) unless the
   * entry already reflects that version or a later one: updates applied in any order, or twice,
   * leave the latest.
   */
  update(entry: IndexedConversation & { version: number }): Promise<void>;
  /** Drops the entry (its conversation was deleted: its title and metadata go with it); idempotent. */
  remove(tenantId: string, conversationId: string): Promise<void>;
  /**
   * One page of the tenant's conversations that pass `filter`, newest first (conversation ids are
   * UUIDv7, so id order is creation order). `cursor` is a previous page's `nextCursor`; a
   * malformed one is a ValidationError naming `cursor`.
   */
  list(
    tenantId: string,
    page?: { limit?: number; cursor?: string },
    filter?: ConversationFilter,
  ): Promise<ConversationPage>;
}

/** The `_id` of an entry: one per tenant and conversation. */
export const indexKey = (tenantId: string, conversationId: string): string => `${tenantId}|${conversationId}`;

const CONVERSATION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The cursor clients see: the last conversation id of the page, base64url (opaque). */
export const encodeCursor = (conversationId: string): string =>
  Buffer.from(conversationId, 'utf8').toString('base64url');

/** The conversation id a cursor stands for; anything else is refused naming `cursor`. */
export const decodeCursor = (cursor: string): string => {
  const id = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!CONVERSATION_ID.test(id)) {
    throw new ValidationError('cursor is not a cursor this list returned', { field: 'cursor' });
  }
  return id;
};

/** The page size asked for: absent or 0 → the default; otherwise 1 to MAX_PAGE_SIZE, or refused naming `limit`. */
export const pageSize = (limit: number | undefined): number => {
  if (limit === undefined || limit === 0) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, { field: 'limit' });
  }
  return limit;
};
