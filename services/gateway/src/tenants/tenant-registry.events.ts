/** The platform's own tenant: the registry of tenants and their keys lives under it. */
export const PLATFORM_TENANT_ID = 'keel';

/** The one stream holding every tenant, key and budget: `tenants-registry`. */
export const TENANT_REGISTRY_STREAM = 'tenants-registry';

/** Roles of tenant keys (API.md Roles). */
export const KEY_ROLES = ['admin', 'editor', 'viewer'] as const;

/** A tenant key's role. */
export type KeyRole = (typeof KEY_ROLES)[number];

/** A tenant was created (`POST /v1/tenants`). */
export interface TenantCreated {
  type: 'TenantCreated';
  data: { tenantId: string; name: string; createdAt: string };
}

/** A key was issued; only the SHA-256 of the key (hex) is stored, never the key. */
export interface KeyIssued {
  type: 'KeyIssued';
  data: { tenantId: string; keyId: string; role: KeyRole; name?: string; keyHash: string; issuedAt: string };
}

/** A key was revoked: from now on it authenticates nothing. */
export interface KeyRevoked {
  type: 'KeyRevoked';
  data: { tenantId: string; keyId: string; revokedAt: string };
}

/** A tenant's monthly budget in USD was set. */
export interface BudgetSet {
  type: 'BudgetSet';
  data: { tenantId: string; monthlyUsd: number; at: string };
}

/** Every event of the tenant registry stream. */
export type TenantRegistryEvent = TenantCreated | KeyIssued | KeyRevoked | BudgetSet;
