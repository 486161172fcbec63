import { createHash } from 'node:crypto';
import { ValidationError, canonicalJson } from '@keel/core';
import type { Principal } from '../auth/principal.js';

/** The request header (API.md Conventions). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** Set on a response that repeats the first response to the same key. */
export const IDEMPOTENT_REPLAY_HEADER = 'idempotent-replayed';

// Printable ASCII, bounded: it is hashed into the store's key, never logged or stored in clear.
const ACCEPTED = /^[\x21-\x7e]{1,255}$/;

/** The request's `Idempotency-Key`, or undefined without one; a malformed one is a 400 naming it. */
export const idempotencyKeyOf = (header: string | string[] | undefined): string | undefined => {
  if (header === undefined) return undefined;
  if (Array.isArray(header) || !ACCEPTED.test(header)) {
    throw new ValidationError('Idempotency-Key must be one value of 1 to 255 printable ASCII characters', {
      field: 'Idempotency-Key',
    });
  }
  return header;
};

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Whose keys a principal's requests share: its tenant's (the operator is its own scope). */
export const keyScopeOf = (principal: Principal): string =>
  principal.kind === 'tenant' ? tenantKeyScope(principal.tenantId) : 'operator';

/** The key scope of a tenant (what a gRPC call, known by its CallContext, shares with HTTP). */
export const tenantKeyScope = (tenantId: string): string => `tenant:${tenantId}`;

/**
 * The store key of a request: the key is per scope (tenant), per operation (method and path).
 * Hashed, so the caller's key is never stored in clear.
 */
export const scopedKey = (scope: string, operation: string, key: string): string =>
  sha256(JSON.stringify([scope, operation, key]));

/** What identifies the request's body: a retry must send the same one. */
export const fingerprintOf = (body: unknown): string => sha256(canonicalJson(body ?? null));
