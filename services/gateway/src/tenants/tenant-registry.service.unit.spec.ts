import { InMemoryEventStore, NotFoundError, UnavailableError } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { createLogger } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { metadataOf } from '../auth/principal.js';
import { hashApiKey } from './api-keys.js';
import { TenantDirectory } from './tenant-directory.js';
import { PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM } from './tenant-registry.events.js';
import { TenantRegistryService } from './tenant-registry.service.js';

const setup = () => {
  const store = new InMemoryEventStore();
  const infra = { store } as unknown as Infrastructure;
  const directory = new TenantDirectory(infra, createLogger('gateway', { level: 'silent' }));
  return { store, directory, registry: new TenantRegistryService(infra, directory) };
};

describe('TenantRegistryService', () => {
  it('stores only the hash of an issued key, with the request id and acting user on every event', async () => {
    const { store, registry, directory } = setup();
    const operator = { kind: 'operator', keyId: 'operator', role: 'operator', userId: 'alice' } as const;
    const tenant = await registry.createTenant('Acme', metadataOf(operator, 'req-9'));
    const issued = await registry.issueKey(tenant.id, 'admin', 'ci', metadataOf(operator, 'req-10'));

    const events = await store.read(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM);
    expect(events.map((e) => e.type)).toEqual(['TenantCreated', 'KeyIssued']);
    expect(JSON.stringify(events)).not.toContain(issued.key);
    expect(events[1]?.data).toMatchObject({ keyId: issued.id, keyHash: hashApiKey(issued.key) });
    expect(events[1]?.metadata).toMatchObject({
      correlationId: 'req-10',
      actor: { keyId: 'operator', role: 'operator', userId: 'alice' },
    });
    expect(directory.keyByHash(hashApiKey(issued.key))).toMatchObject({
      tenantId: tenant.id,
      revoked: false,
    });
  });

  it('refuses keys and budgets for unknown tenants, and unknown keys, writing nothing', async () => {
    const { store, registry } = setup();
    await expect(registry.issueKey('tn_nope', 'admin', undefined, {})).rejects.toBeInstanceOf(NotFoundError);
    await expect(registry.setBudget('tn_nope', 5, {})).rejects.toBeInstanceOf(NotFoundError);
    const tenant = await registry.createTenant('Acme', {});
    await expect(registry.revokeKey(tenant.id, 'key_nope', {})).rejects.toBeInstanceOf(NotFoundError);
    expect(await store.streamVersion(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM)).toBe(1);
  });

  it('rebuilds tenants, keys and budgets from the log in a fresh directory', async () => {
    const { store, registry } = setup();
    const tenant = await registry.createTenant('Acme', {});
    const key = await registry.issueKey(tenant.id, 'viewer', undefined, {});
    await registry.revokeKey(tenant.id, key.id, {});
    await registry.setBudget(tenant.id, 10, {});
    const fresh = new TenantDirectory(
      { store } as unknown as Infrastructure,
      createLogger('gateway', { level: 'silent' }),
    );
    await fresh.onModuleInit();
    expect(fresh.tenants()).toMatchObject([{ id: tenant.id, name: 'Acme', monthlyUsd: 10 }]);
    expect(fresh.keyByHash(hashApiKey(key.key))).toMatchObject({ keyId: key.id, revoked: true });
    expect(fresh.version).toBe(4);
  });

  it('fails closed with UNAVAILABLE when the store cannot be read', async () => {
    const store = new InMemoryEventStore();
    store.read = () => Promise.reject(new Error('connection refused'));
    const directory = new TenantDirectory(
      { store } as unknown as Infrastructure,
      createLogger('gateway', { level: 'silent' }),
    );
    await expect(directory.catchUp()).rejects.toBeInstanceOf(UnavailableError);
  });
});
