import { createHash, createHmac } from 'node:crypto';
import { ValidationError, canonicalJson } from '@keel/core';
import type { AcceptedRequest } from '@keel/events';

// As the gateway accepts Idempotency-Key: printable ASCII, 1 to 255 characters.
const ACCEPTED_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The AcceptedRequest a command carries into the conversation's log, from the request's
 * `idempotency_key` (empty: none, so undefined). `operation` names what the key is for (the RPC,
 * and the approval it decides), as the gateway scopes keys by method and path: the same key on
 * another operation is another request. `key` is a digest (the client's key is never stored);
 * `hash` is an HMAC of the request's `fields` under the client's key, so the log reveals nothing
 * of the fields to anyone without the key (a short message is not guessable from its digest).
 * A malformed key is INVALID_ARGUMENT naming `idempotency_key`.
 */
export const acceptedRequestOf = (
  operation: string,
  idempotencyKey: string | undefined,
  fields: Record<string, unknown>,
): AcceptedRequest | undefined => {
  if (idempotencyKey === undefined || idempotencyKey === '') return undefined;
  if (!ACCEPTED_KEY.test(idempotencyKey)) {
    throw new ValidationError('idempotency_key must be 1 to 255 printable ASCII characters', {
      field: 'idempotency_key',
    });
  }
  return {
    key: createHash('sha256')
      .update(JSON.stringify([operation, idempotencyKey]))
      .digest('hex'),
    hash: createHmac('sha256', idempotencyKey).update(canonicalJson(fields)).digest('hex'),
  };
};
