// Bodies of the conversation routes (API.md "Conversations"), mapped to keel.conversations.v1 requests.
import { isEndUserRole } from '@keel/events';
import {
  fail,
  objectWith,
  optionalJsonObject,
  optionalString,
  optionalWord,
  requiredString,
} from '../config/request-fields.js';
import { readEnv } from '@keel/runtime';

/** keel.conversations.v1.CreateConversationRequest's fields the body sets. */
export interface CreateConversationFields {
  agentId: string;
  title: string;
  metadata: Record<string, string>;
}

/** keel.conversations.v1.SendMessageRequest's fields the body sets (enums by name). */
export interface SendMessageFields {
  content: string;
  ifBusy: 'IF_BUSY_REJECT' | 'IF_BUSY_ENQUEUE' | 'IF_BUSY_INTERRUPT';
  /** The per-message `context` as JSON text; empty or absent when the body has none. */
  contextJson?: string;
  /** Edit/regenerate: the user message this one replaces (API `replaceFrom`); absent: none. */
  replaceFrom?: string;
}

/** Largest per-message `context` as JSON text (API.md "Per-message context"): 32 KiB. */
export const MAX_CONTEXT_BYTES = 32 * 1024;

/** The end-user role header (API.md "The end user"), next to `X-Keel-User`. */
export const USER_ROLE_HEADER = 'x-keel-user-role';

/** `X-Keel-User-Role`: a role word, or empty when absent; a malformed one is a 400 naming the header. */
export const parseUserRole = (value: string | string[] | undefined, field = 'X-Keel-User-Role'): string => {
  if (value === undefined) return '';
  if (Array.isArray(value) || !isEndUserRole(value)) {
    return fail(field, `${field} must be one word of 1 to 64 letters, digits, _ or -`);
  }
  return value;
};

/** keel.conversations.v1.DecideApprovalRequest's fields the body sets (enums by name). */
export interface DecideApprovalFields {
  decision: 'DECISION_APPROVE' | 'DECISION_DENY';
  reason: string;
}

const IF_BUSY = {
  reject: 'IF_BUSY_REJECT',
  enqueue: 'IF_BUSY_ENQUEUE',
  interrupt: 'IF_BUSY_INTERRUPT',
} as const;
const DECISION = { approve: 'DECISION_APPROVE', deny: 'DECISION_DENY' } as const;

/** Largest user message the gateway forwards (characters): `KEEL_MAX_MESSAGE_CHARS`, default 100,000. */
export const MAX_CONTENT_CHARS = Number(readEnv('KEEL_MAX_MESSAGE_CHARS'));

/** Checks `{ agentId, title?, metadata? }`; metadata is string values only (a proto map). */
export const parseCreateConversation = (body: unknown): CreateConversationFields => {
  const object = objectWith(body, ['agentId', 'title', 'metadata']);
  const agentId = requiredString(object.agentId, 'agentId', 64);
  const title = optionalString(object.title, 'title', 200) ?? '';
  return { agentId, title, metadata: parseMetadata(object.metadata) };
};

/** Most keys of a conversation's `metadata`. */
export const MAX_METADATA_KEYS = 64;
/** Longest `metadata` value (characters). */
export const MAX_METADATA_VALUE_CHARS = 512;
/** A `metadata` key: a word that is also safe as a query parameter (`metadata.<key>=`) and a document path. */
const METADATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `metadata`: at most 64 keys matching `[A-Za-z0-9_-]{1,64}` with string values of at most 512
 * characters. Returned as a null-prototype object so no key, `__proto__` included, is special.
 */
export const parseMetadata = (value: unknown): Record<string, string> => {
  const metadata = Object.create(null) as Record<string, string>;
  if (value === undefined) return metadata;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail('metadata', 'metadata must be an object of string values');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_METADATA_KEYS) {
    return fail('metadata', `metadata must have at most ${MAX_METADATA_KEYS} keys`);
  }
  for (const [key, item] of entries) {
    if (!METADATA_KEY.test(key)) {
      return fail('metadata', 'metadata keys must match ^[A-Za-z0-9_-]{1,64}$');
    }
    metadata[key] = optionalString(item ?? null, `metadata.${key}`, MAX_METADATA_VALUE_CHARS)!;
  }
  return metadata;
};

/**
 * A gRPC `context_json` (the same rules as the body's `context`): a JSON object of at most
 * 32 KiB, re-serialized; empty stays empty.
 */
export const parseContextJson = (text: string, field = 'context_json'): string => {
  if (text === '') return '';
  if (Buffer.byteLength(text) > MAX_CONTEXT_BYTES) {
    return fail(field, `${field} must be at most ${MAX_CONTEXT_BYTES} bytes as JSON`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(field, `${field} must be a JSON object`);
  }
  return JSON.stringify(optionalJsonObject(value, field, MAX_CONTEXT_BYTES));
};

/** Checks `{ content, ifBusy?, context? }` (`context`: a JSON object of at most 32 KiB as JSON). */
export const parseSendMessage = (body: unknown): SendMessageFields => {
  const object = objectWith(body, ['content', 'ifBusy', 'context', 'replaceFrom']);
  const content = requiredString(object.content, 'content', MAX_CONTENT_CHARS);
  const ifBusy =
    optionalWord(object.ifBusy, 'ifBusy', ['reject', 'enqueue', 'interrupt'] as const) ?? 'reject';
  const context = optionalJsonObject(object.context, 'context', MAX_CONTEXT_BYTES);
  const replaceFrom = optionalString(object.replaceFrom, 'replaceFrom', 64);
  if (replaceFrom === '') fail('replaceFrom', 'replaceFrom must be a message id');
  return {
    content,
    ifBusy: IF_BUSY[ifBusy],
    ...(context ? { contextJson: JSON.stringify(context) } : {}),
    ...(replaceFrom ? { replaceFrom } : {}),
  };
};

/** Checks `{ decision, reason? }`. */
export const parseDecideApproval = (body: unknown): DecideApprovalFields => {
  const object = objectWith(body, ['decision', 'reason']);
  const decision = optionalWord(object.decision, 'decision', ['approve', 'deny'] as const);
  if (decision === undefined) fail('decision', 'decision is required (approve or deny)');
  return {
    decision: DECISION[decision as 'approve' | 'deny'],
    reason: optionalString(object.reason, 'reason', 2000) ?? '',
  };
};

/** keel.conversations.v1.ListConversationsRequest from the query (`limit` 0: the agent's default). */
export interface ListConversationsFields {
  limit: number;
  cursor: string;
}

/** One query parameter as a string; a repeated one is refused by name. */
const queryValue = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** Largest page of `GET /v1/conversations`. */
export const MAX_LIST_LIMIT = 100;

/** Checks `?limit=` (1–100, default the agent's) and `?cursor=` (a previous page's `nextCursor`). */
export const parseListConversations = (query: {
  limit?: unknown;
  cursor?: unknown;
}): ListConversationsFields => {
  const limitText = queryValue(query.limit, 'limit');
  const cursor = queryValue(query.cursor, 'cursor') ?? '';
  let limit = 0;
  if (limitText !== undefined) {
    limit = /^[0-9]{1,3}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) {
      fail('limit', `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    }
  }
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]*$/.test(cursor)) {
    fail('cursor', 'cursor is not a cursor this list returned');
  }
  return { limit, cursor };
};
