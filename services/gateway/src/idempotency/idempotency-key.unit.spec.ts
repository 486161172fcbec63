import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { fingerprintOf, idempotencyKeyOf, keyScopeOf, scopedKey, tenantKeyScope } from './idempotency-key.js';

const tenant = (tenantId: string): Principal => ({
  kind: 'tenant',
  tenantId,
  keyId: 'k1',
  role: 'editor',
  userId: 'u1',
});

describe('idempotencyKeyOf', () => {
  it('takes one printable ASCII value of up to 255 characters, or none', () => {
    expect(idempotencyKeyOf(undefined)).toBeUndefined();
    expect(idempotencyKeyOf('a-1_B:2')).toBe('a-1_B:2');
    expect(idempotencyKeyOf('x'.repeat(255))).toHaveLength(255);
  });

  it('refuses an empty, long, non-ASCII or repeated key, naming Idempotency-Key', () => {
    for (const bad of ['', 'x'.repeat(256), 'clé', 'a b', ['a', 'b']]) {
      expect(() => idempotencyKeyOf(bad)).toThrow(ValidationError);
      expect(() => idempotencyKeyOf(bad)).toThrow(expect.objectContaining({ field: 'Idempotency-Key' }));
    }
  });
});

describe('scopedKey and fingerprintOf', () => {
  it('scopes a key by tenant and operation, and never holds it in clear', () => {
    const key = scopedKey(keyScopeOf(tenant('t1')), 'POST /v1/conversations', 'my-key');
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(scopedKey(tenantKeyScope('t1'), 'POST /v1/conversations', 'my-key')).toBe(key);
    expect(scopedKey(keyScopeOf(tenant('t2')), 'POST /v1/conversations', 'my-key')).not.toBe(key);
    expect(scopedKey(keyScopeOf(tenant('t1')), 'POST /v1/conversations/c1/cancel', 'my-key')).not.toBe(key);
    const operator: Principal = { kind: 'operator', keyId: 'operator', role: 'operator', userId: 'op' };
    expect(scopedKey(keyScopeOf(operator), 'POST /v1/conversations', 'my-key')).not.toBe(key);
  });

  it('sees the same body in any key order as the same request, and any other body as another', () => {
    const body = { a: 1, b: { c: [1, { d: 'x', e: null }] } };
    const reordered = { b: { c: [1, { e: null, d: 'x' }] }, a: 1 };
    expect(fingerprintOf(reordered)).toBe(fingerprintOf(body));
    expect(fingerprintOf({ ...body, a: 2 })).not.toBe(fingerprintOf(body));
    expect(fingerprintOf({ b: body.b })).not.toBe(fingerprintOf(body));
    expect(fingerprintOf([1, 2])).not.toBe(fingerprintOf([2, 1]));
    expect(fingerprintOf(undefined)).toBe(fingerprintOf(null));
  });
});
