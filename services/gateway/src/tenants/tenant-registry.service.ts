import type { EventMetadata } from '@keel/core';
import { CommandHandler, NotFoundError, uuidv7 } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { Inject, Injectable } from '@nestjs/common';
import { generateApiKey, hashApiKey } from './api-keys.js';
import { KeyUsage } from './key-usage.js';
import { TenantDirectory } from './tenant-directory.js';
import type { TenantRegistry, TenantRegistryCommand } from './tenant-registry.decider.js';
import { TENANT_REGISTRY_SNAPSHOT, tenantRegistryDecider } from './tenant-registry.decider.js';
import type { KeyRole, TenantRegistryEvent } from './tenant-registry.events.js';
import { PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM } from './tenant-registry.events.js';

/** A tenant as the API shows it. */
export interface TenantView {
  id: string;
  name: string;
  createdAt: string;
  monthlyUsd?: number;
}

/** A freshly issued key: the only time `key` is ever seen. */
export interface IssuedKey {
  id: string;
  role: KeyRole;
  key: string;
}

/** A key as `GET /v1/keys` shows it: never the key, never its hash. */
export interface KeyView {
  id: string;
  role: KeyRole;
  name: string | null;
  createdAt: string;
  /** When it last authenticated a request (within a minute), or null if never. */
  lastUsedAt: string | null;
}

const hex = (): string => uuidv7().replace(/-/g, '');

/**
 * Writes to the tenant registry (operator routes); each answers once this gateway's directory has
 * folded the write and seen it on the bus (TenantDirectory says what that guarantees elsewhere).
 */
@Injectable()
export class TenantRegistryService {
  private readonly handler: CommandHandler<TenantRegistry, TenantRegistryCommand, TenantRegistryEvent>;

  constructor(
    @Inject(KEEL_INFRA) infra: Infrastructure,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(KeyUsage) private readonly usage?: KeyUsage,
  ) {
    // One stream for the whole platform: retry lost races generously (operator writes are rare).
    this.handler = new CommandHandler(infra.store, tenantRegistryDecider, {
      snapshot: { name: TENANT_REGISTRY_SNAPSHOT, every: 100 },
      maxRetries: 10,
    });
  }

  /** Creates a tenant with a new id. */
  async createTenant(name: string, metadata: EventMetadata): Promise<TenantView> {
    const tenantId = `tn_${hex()}`;
    const at = new Date().toISOString();
    await this.run({ type: 'CreateTenant', tenantId, name, at }, metadata);
    return { id: tenantId, name, createdAt: at };
  }

  /** Issues a key; the key is returned once and only its hash is stored. */
  async issueKey(
    tenantId: string,
    role: KeyRole,
    name: string | undefined,
    metadata: EventMetadata,
  ): Promise<IssuedKey> {
    const key = generateApiKey();
    const keyId = `key_${hex()}`;
    await this.run(
      {
        type: 'IssueKey',
        tenantId,
        keyId,
        role,
        ...(name !== undefined ? { name } : {}),
        keyHash: hashApiKey(key),
        at: new Date().toISOString(),
      },
      metadata,
    );
    return { id: keyId, role, key };
  }

  /** Revokes a key; it authenticates nothing from the moment this resolves (see TenantDirectory). */
  async revokeKey(tenantId: string, keyId: string, metadata: EventMetadata): Promise<void> {
    await this.run({ type: 'RevokeKey', tenantId, keyId, at: new Date().toISOString() }, metadata);
  }

  /** Sets a tenant's monthly budget. */
  async setBudget(tenantId: string, monthlyUsd: number, metadata: EventMetadata): Promise<TenantView> {
    await this.run({ type: 'SetBudget', tenantId, monthlyUsd, at: new Date().toISOString() }, metadata);
    const tenant = this.directory.tenant(tenantId);
    return { ...(tenant ? viewOf(tenant) : { id: tenantId, name: '', createdAt: '' }), monthlyUsd };
  }

  /** The tenant's keys that still work, oldest first; unknown tenant: NotFoundError. */
  async listKeys(tenantId: string): Promise<KeyView[]> {
    await this.directory.catchUp();
    const tenant = this.directory.tenant(tenantId);
    if (!tenant) throw new NotFoundError(`no tenant ${tenantId}`, { details: { tenantId } });
    const keys = Object.values(tenant.keys).filter((key) => !key.revoked);
    const lastUsed = (await this.usage?.lastUsed(keys.map((key) => key.keyId))) ?? new Map();
    return keys.map((key) => ({
      id: key.keyId,
      role: key.role,
      name: key.name ?? null,
      createdAt: key.issuedAt,
      lastUsedAt: lastUsed.get(key.keyId) ?? null,
    }));
  }

  /** Every tenant, read after catching up with the log. */
  async listTenants(): Promise<TenantView[]> {
    await this.directory.catchUp();
    return this.directory.tenants().map(viewOf);
  }

  /** Commits the command, then has the directory fold it and see it on the bus before answering. */
  private async run(command: TenantRegistryCommand, metadata: EventMetadata): Promise<void> {
    const handled = await this.handler.handle(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, command, {
      metadata,
    });
    await this.directory.written(handled.events);
  }
}

const viewOf = (tenant: {
  id: string;
  name: string;
  createdAt: string;
  monthlyUsd?: number;
}): TenantView => ({
  id: tenant.id,
  name: tenant.name,
  createdAt: tenant.createdAt,
  ...(tenant.monthlyUsd !== undefined ? { monthlyUsd: tenant.monthlyUsd } : {}),
});
