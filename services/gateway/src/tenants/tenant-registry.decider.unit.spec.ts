import { AlreadyExistsError, NotFoundError, ValidationError } from '@keel/core';
import { DeciderSpec } from '@keel/core/testing';
import { describe, expect, it } from 'vitest';
import { tenantRegistryDecider } from './tenant-registry.decider.js';
import type { TenantRegistryEvent } from './tenant-registry.events.js';

const at = '2026-11-21T10:00:00.000Z';
const later = '2026-11-21T11:00:00.000Z';
const hash = 'a'.repeat(64);
const spec = DeciderSpec.for(tenantRegistryDecider);
const created: TenantRegistryEvent = {
  type: 'TenantCreated',
  data: { tenantId: 't1', name: 'Acme', createdAt: at },
};
const issued: TenantRegistryEvent = {
  type: 'KeyIssued',
  data: { tenantId: 't1', keyId: 'k1', role: 'admin', name: 'ci', keyHash: hash, issuedAt: at },
};
const revoked: TenantRegistryEvent = {
  type: 'KeyRevoked',
  data: { tenantId: 't1', keyId: 'k1', revokedAt: later },
};

const refusedField = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field;
  }
  return undefined;
};

describe('tenant registry', () => {
  it('creates a tenant with a 1-100 character name', () => {
    spec.given([]).when({ type: 'CreateTenant', tenantId: 't1', name: 'Acme', at }).then([created]);
    const create = (name: string) => () =>
      tenantRegistryDecider.decide(
        { type: 'CreateTenant', tenantId: 't2', name, at },
        tenantRegistryDecider.initialState(),
      );
    expect(refusedField(create(''))).toBe('name');
    expect(refusedField(create('   '))).toBe('name');
    expect(refusedField(create('x'.repeat(101)))).toBe('name');
    expect(refusedField(create('x'.repeat(100)))).toBeUndefined();
    spec
      .given([created])
      .when({ type: 'CreateTenant', tenantId: 't1', name: 'Again', at })
      .thenThrows(AlreadyExistsError);
  });

  it('issues keys storing only the hash, to known tenants, with a known role', () => {
    spec
      .given([created])
      .when({ type: 'IssueKey', tenantId: 't1', keyId: 'k1', role: 'admin', name: 'ci', keyHash: hash, at })
      .then([issued]);
    spec
      .given([])
      .when({ type: 'IssueKey', tenantId: 't1', keyId: 'k1', role: 'admin', keyHash: hash, at })
      .thenThrows(NotFoundError, /t1/);
    const issue =
      (role: string, keyHash = hash) =>
      () =>
        tenantRegistryDecider.decide(
          { type: 'IssueKey', tenantId: 't1', keyId: 'k2', role, keyHash, at },
          tenantRegistryDecider.evolve(tenantRegistryDecider.initialState(), created),
        );
    expect(refusedField(issue('owner'))).toBe('role');
    expect(refusedField(issue('viewer', 'keel_plaintext'))).toBe('keyHash');
  });

  it('revokes a key once; an unknown key or tenant is not found', () => {
    spec
      .given([created, issued])
      .when({ type: 'RevokeKey', tenantId: 't1', keyId: 'k1', at: later })
      .then([revoked]);
    spec
      .given([created, issued, revoked])
      .when({ type: 'RevokeKey', tenantId: 't1', keyId: 'k1', at: later })
      .then([]);
    spec
      .given([created])
      .when({ type: 'RevokeKey', tenantId: 't1', keyId: 'nope', at })
      .thenThrows(NotFoundError);
    spec.given([]).when({ type: 'RevokeKey', tenantId: 't1', keyId: 'k1', at }).thenThrows(NotFoundError);
    spec
      .given([created, issued])
      .when({ type: 'RevokeKey', tenantId: 't1', keyId: 'k1', at: later })
      .thenState({
        tenants: {
          t1: {
            id: 't1',
            name: 'Acme',
            createdAt: at,
            keys: {
              k1: { keyId: 'k1', role: 'admin', name: 'ci', keyHash: hash, issuedAt: at, revoked: true },
            },
          },
        },
      });
  });

  it('sets a non-negative budget on a known tenant', () => {
    spec
      .given([created])
      .when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: 25.5, at })
      .then([{ type: 'BudgetSet', data: { tenantId: 't1', monthlyUsd: 25.5, at } }]);
    spec
      .given([created])
      .when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: 0, at })
      .then([{ type: 'BudgetSet', data: { tenantId: 't1', monthlyUsd: 0, at } }]);
    spec
      .given([created])
      .when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: -1, at })
      .thenThrows(ValidationError, /monthlyUsd/);
    spec
      .given([created])
      .when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: Number.NaN, at })
      .thenThrows(ValidationError);
    spec.given([]).when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: 1, at }).thenThrows(NotFoundError);
  });

  it('finds no tenant or key under a prototype name (toString, constructor, __proto__, …)', () => {
    for (const id of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
      spec
        .given([created])
        .when({ type: 'SetBudget', tenantId: id, monthlyUsd: 1, at })
        .thenThrows(NotFoundError);
      spec
        .given([created])
        .when({ type: 'IssueKey', tenantId: id, keyId: 'k9', role: 'admin', keyHash: hash, at })
        .thenThrows(NotFoundError);
      spec
        .given([created])
        .when({ type: 'RevokeKey', tenantId: id, keyId: 'x', at })
        .thenThrows(NotFoundError);
      spec
        .given([created, issued])
        .when({ type: 'RevokeKey', tenantId: 't1', keyId: id, at })
        .thenThrows(NotFoundError);
      spec
        .given([created])
        .when({ type: 'CreateTenant', tenantId: id, name: 'Proto', at })
        .then([{ type: 'TenantCreated', data: { tenantId: id, name: 'Proto', createdAt: at } }]);
    }
  });

  it('ignores events logged for tenants or keys that never existed (written before own-key lookups)', () => {
    const strays: TenantRegistryEvent[] = [
      { type: 'BudgetSet', data: { tenantId: '__proto__', monthlyUsd: 5, at } },
      { type: 'BudgetSet', data: { tenantId: 'constructor', monthlyUsd: 5, at } },
      {
        type: 'KeyIssued',
        data: { tenantId: 'constructor', keyId: 'k9', role: 'admin', keyHash: hash, issuedAt: at },
      },
      { type: 'KeyRevoked', data: { tenantId: 't1', keyId: 'toString', revokedAt: at } },
    ];
    spec
      .given([created, ...strays])
      .when({ type: 'SetBudget', tenantId: 't1', monthlyUsd: 1, at })
      .thenState({ tenants: { t1: { id: 't1', name: 'Acme', createdAt: at, keys: {}, monthlyUsd: 1 } } });
  });
});
