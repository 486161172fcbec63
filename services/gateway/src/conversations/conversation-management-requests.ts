// Bodies and queries of API.md "Conversation management" (list filters, PATCH, feedback),
// mapped to keel.conversations.v1 requests. Limits: a title is 1 to 200 characters; metadata is
// at most 64 keys of `[A-Za-z0-9_-]{1,64}` with string values of at most 512 characters (as at
// creation); a feedback comment at most 2000 characters.
import { fail, objectWith, optionalString, optionalWord } from '../config/request-fields.js';
import { parseListConversations, parseMetadata } from './conversation-requests.js';
import type { ListConversationsFields } from './conversation-requests.js';

/** Longest conversation title (characters). */
export const MAX_TITLE_CHARS = 200;
/** Longest feedback comment (characters). */
export const MAX_COMMENT_CHARS = 2000;

/** The statuses a list may be filtered by, as keel.conversations.v1.ConversationStatus names. */
const STATUS = {
  idle: 'CONVERSATION_STATUS_IDLE',
  running: 'CONVERSATION_STATUS_RUNNING',
  awaiting_approval: 'CONVERSATION_STATUS_AWAITING_APPROVAL',
  awaiting_client: 'CONVERSATION_STATUS_AWAITING_CLIENT',
  failed: 'CONVERSATION_STATUS_FAILED',
} as const;

/** keel.conversations.v1.ListConversationsRequest's fields the query sets. */
export interface ListFilterFields extends ListConversationsFields {
  agentId: string;
  userId: string;
  status: (typeof STATUS)[keyof typeof STATUS] | 'CONVERSATION_STATUS_UNSPECIFIED';
  metadata: Record<string, string>;
}

const METADATA_PARAM = /^metadata\.([A-Za-z0-9_-]{1,64})$/;

/** A query parameter given once (a repeated one is refused by name). */
const once = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** A filter word of at most 64 characters, or absent. */
const filterWord = (value: unknown, field: string): string => {
  const text = once(value, field);
  if (text === undefined) return '';
  if (text === '' || text.length > 64) return fail(field, `${field} must be 1 to 64 characters`);
  return text;
};

/**
 * `GET /v1/conversations?limit=&cursor=&agentId=&userId=&status=&metadata.<key>=<value>`: every
 * parameter checked by name; an unknown one is refused naming it.
 */
export const parseListQuery = (query: Record<string, unknown>): ListFilterFields => {
  const metadata = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(query)) {
    if (['limit', 'cursor', 'agentId', 'userId', 'status'].includes(name)) continue;
    const key = METADATA_PARAM.exec(name)?.[1];
    if (key === undefined) {
      fail(
        name,
        `${name}: unknown query parameter (allowed: limit, cursor, agentId, userId, status, metadata.<key>)`,
      );
    }
    const text = once(value, name)!;
    if (text.length > 512) fail(name, `${name} must be at most 512 characters`);
    metadata[key!] = text;
  }
  const status = once(query.status, 'status');
  const statusWord =
    status === undefined
      ? undefined
      : optionalWord(status, 'status', Object.keys(STATUS) as Array<keyof typeof STATUS>);
  return {
    ...parseListConversations({ limit: query.limit, cursor: query.cursor }),
    agentId: filterWord(query.agentId, 'agentId'),
    userId: filterWord(query.userId, 'userId'),
    status: statusWord === undefined ? 'CONVERSATION_STATUS_UNSPECIFIED' : STATUS[statusWord],
    metadata,
  };
};

/** keel.conversations.v1.UpdateConversationRequest's fields the body sets. */
export interface UpdateConversationFields {
  title?: string;
  metadata: Record<string, string>;
  replaceMetadata: boolean;
}

/** `PATCH` `{ title?, metadata? }`: at least one; `metadata` replaces the whole map. */
export const parseUpdateConversation = (body: unknown): UpdateConversationFields => {
  const object = objectWith(body, ['title', 'metadata']);
  if (object.title === undefined && object.metadata === undefined) {
    fail('title', 'title or metadata is required');
  }
  const title = optionalString(object.title, 'title', MAX_TITLE_CHARS);
  if (title !== undefined && title.trim() === '') fail('title', 'title must not be blank');
  if (object.metadata === null) fail('metadata', 'metadata must be an object of string values');
  return {
    ...(title === undefined ? {} : { title }),
    metadata: parseMetadata(object.metadata),
    replaceMetadata: object.metadata !== undefined,
  };
};

/** keel.conversations.v1.SubmitFeedbackRequest's fields the body sets. */
export interface FeedbackFields {
  rating: 'up' | 'down';
  comment: string;
}

/** `{ rating: "up"|"down", comment? }`. */
export const parseFeedback = (body: unknown): FeedbackFields => {
  const object = objectWith(body, ['rating', 'comment']);
  const rating = optionalWord(object.rating, 'rating', ['up', 'down'] as const);
  if (rating === undefined) return fail('rating', 'rating is required (up or down)');
  return { rating, comment: optionalString(object.comment, 'comment', MAX_COMMENT_CHARS) ?? '' };
};
