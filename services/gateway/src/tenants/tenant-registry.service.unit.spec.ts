import type { RecordedEvent } from '@keel/core';
import { InMemoryEventStore, NotFoundError, UnavailableError, WatchedStreams } from '@keel/core';
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

  it('with a watch, answers a write once the bus has delivered it, or after publishWaitMs when it never does; reads the log only when the watch does not vouch', async () => {
    const store = new InMemoryEventStore();
    const watchers = new Set<(event: RecordedEvent) => void>();
    let delivering = true;
    // This process's commits published on the bus (the fast path), while `delivering`.
    store.onCommitted((events) => {
      if (delivering) for (const event of events) for (const watcher of watchers) watcher(event);
    });
    const bus = {
      watch: (_stream: unknown, onEvent: (event: RecordedEvent) => void) => {
        watchers.add(onEvent);
        return { unsubscribe: () => watchers.delete(onEvent) };
      },
      ping: () => Promise.resolve(),
    };
    const infra = { store, bus, watched: new WatchedStreams(bus) } as unknown as Infrastructure;
    const directory = new TenantDirectory(infra, createLogger('gateway', { level: 'silent' }), 100);
    await directory.onModuleInit();
    const registry = new TenantRegistryService(infra, directory);
    const tenant = await registry.createTenant('Acme', {});
    const key = await registry.issueKey(tenant.id, 'viewer', undefined, {});
    let reads = 0;
    const read = store.read.bind(store);
    store.read = (...args) => {
      reads++;
      return read(...args);
    };
    await directory.catchUp();
    expect(reads).toBe(0);

    delivering = false;
    const startedAt = Date.now();
    await registry.revokeKey(tenant.id, key.id, {});
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(95);
    // Folded by the writer itself; the handler's load read the stream, the directory did not.
    expect(directory.keyByHash(hashApiKey(key.key))).toMatchObject({ revoked: true });
    const readsByWrite = reads;
    await directory.catchUp();
    expect(reads).toBe(readsByWrite);
    directory.onModuleDestroy();
  });
});
