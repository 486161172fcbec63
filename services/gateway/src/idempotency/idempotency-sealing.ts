/**
 * Which conversation a response kept for Idempotency-Key retries is about: its content (a
 * message, a feedback comment, a title) is then sealed with that conversation's data key, so
 * deleting the conversation leaves nothing of it readable in the store for the 24 h a response is
 * kept. The conversation is named in the operation (HTTP `POST /v1/conversations/{id}/…`, gRPC
 * `ConversationService.<Method> {id}…`), or is the one the request created (the response's id).
 */
export const conversationOfRecord = (operation: string, record: unknown): string | undefined => {
  const named = NAMED.exec(operation) ?? GRPC_NAMED.exec(operation);
  if (named) return named[1];
  if (operation === 'POST /v1/conversations') return stringAt(record, ['body', 'id']);
  if (operation === 'gRPC ConversationService.CreateConversation')
    return stringAt(record, ['body', 'conversation', 'id']);
  return undefined;
};

const NAMED = /^POST \/v1\/conversations\/([^/?]+)/;
const GRPC_NAMED = /^gRPC ConversationService\.\w+ ([^/\s]+)/;

const stringAt = (value: unknown, path: readonly string[]): string | undefined => {
  let at = value;
  for (const name of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return typeof at === 'string' && at.length > 0 ? at : undefined;
};

/** How a sealed record is kept: the conversation whose key opens it, and the sealed value. */
export interface SealedRecord {
  keelSealedFor: string;
  sealed: unknown;
}

export const isSealedRecord = (stored: unknown): stored is SealedRecord =>
  typeof stored === 'object' &&
  stored !== null &&
  typeof (stored as { keelSealedFor?: unknown }).keelSealedFor === 'string' &&
  Object.hasOwn(stored, 'sealed');

/** The tenant of a key scope (`tenant:<id>`); undefined for the operator's. */
export const tenantOfScope = (scope: string): string | undefined =>
  scope.startsWith('tenant:') ? scope.slice('tenant:'.length) : undefined;

/** What `sealFor` binds a kept response to. */
export const IDEMPOTENCY_PURPOSE = 'idempotency';
