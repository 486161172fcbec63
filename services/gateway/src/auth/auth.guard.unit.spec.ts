import {
  InMemoryCheckpointStore,
  InMemoryEventStore,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
  ValidationError,
} from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { createLogger } from '@keel/runtime';
import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { hashApiKey } from '../tenants/api-keys.js';
import { KeyUsage } from '../tenants/key-usage.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { TenantRegistryService } from '../tenants/tenant-registry.service.js';
import { AuthGuard } from './auth.guard.js';
import type { AuthenticatedRequest } from './principal.js';
import { Public, Roles } from './roles.decorator.js';

const OPERATOR_KEY = 'operator-secret';

class Routes {
  @Roles('operator') operatorOnly(): void {}
  @Roles('editor') editors(): void {}
  @Roles('viewer') readers(): void {}
  @Public() probe(): void {}
  anyKey(): void {}
}

const contextFor = (route: keyof Routes, request: AuthenticatedRequest): ExecutionContext =>
  ({
    getType: () => 'http',
    getHandler: () => Routes.prototype[route],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => request }),
  }) as unknown as ExecutionContext;

const requestWith = (key?: string, user?: string, tenant?: string): AuthenticatedRequest => ({
  id: 'req-1',
  headers: {
    ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}),
    ...(user !== undefined ? { 'x-keel-user': user } : {}),
    ...(tenant !== undefined ? { 'x-keel-tenant': tenant } : {}),
  },
});

const silent = createLogger('gateway', { level: 'silent' });
const metadata = { correlationId: 'test' };

describe('AuthGuard', () => {
  let store: InMemoryEventStore;
  let guard: AuthGuard;
  let registry: TenantRegistryService;
  let tenantId: string;
  let usage: KeyUsage;

  /** Another gateway instance on the same store: its directory is its own. */
  const instance = () => {
    const directory = new TenantDirectory({ store } as unknown as Infrastructure, silent);
    return {
      guard: new AuthGuard(new Reflector(), directory, OPERATOR_KEY, usage),
      registry: new TenantRegistryService({ store } as unknown as Infrastructure, directory, usage),
    };
  };

  const check = async (route: keyof Routes, request: AuthenticatedRequest, on = guard) => {
    await on.canActivate(contextFor(route, request));
    return request.principal;
  };

  beforeEach(async () => {
    store = new InMemoryEventStore();
    usage = new KeyUsage({ checkpoints: new InMemoryCheckpointStore() }, silent);
    ({ guard, registry } = instance());
    tenantId = (await registry.createTenant('Acme', metadata)).id;
  });

  it('admits the operator key on operator routes only by exact match', async () => {
    expect(await check('operatorOnly', requestWith(OPERATOR_KEY))).toMatchObject({ kind: 'operator' });
    await expect(check('operatorOnly', requestWith(`${OPERATOR_KEY}x`))).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    await expect(check('editors', requestWith(OPERATOR_KEY))).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it('lets the operator act as a tenant admin with X-Keel-Tenant, and a tenant key never', async () => {
    expect(await check('editors', requestWith(OPERATOR_KEY, undefined, tenantId))).toEqual({
      kind: 'tenant',
      tenantId,
      keyId: 'operator',
      role: 'admin',
      userId: 'operator',
      actingOperator: true,
    });
    // Operator-only routes stay the operator's; an unknown tenant is 404 on every route.
    expect(await check('operatorOnly', requestWith(OPERATOR_KEY, undefined, tenantId))).toMatchObject({
      kind: 'operator',
    });
    for (const route of ['readers', 'operatorOnly'] as const) {
      await expect(check(route, requestWith(OPERATOR_KEY, undefined, 'tn_nope'))).rejects.toBeInstanceOf(
        NotFoundError,
      );
    }
    const other = (await registry.createTenant('Globex', metadata)).id;
    const admin = await registry.issueKey(tenantId, 'admin', undefined, metadata);
    expect(await check('readers', requestWith(admin.key, undefined, tenantId))).toMatchObject({
      tenantId,
      keyId: admin.id,
    });
    for (const named of [other, 'tn_nope']) {
      await expect(check('readers', requestWith(admin.key, undefined, named))).rejects.toBeInstanceOf(
        PermissionDeniedError,
      );
    }
  });

  it('refuses a missing, malformed or unknown key with 401, and lets public routes through', async () => {
    for (const request of [
      requestWith(),
      requestWith('keel_unknown'),
      { id: 'r', headers: { authorization: 'Basic abc' } },
    ]) {
      await expect(check('anyKey', request)).rejects.toBeInstanceOf(UnauthenticatedError);
    }
    expect(await check('probe', requestWith())).toBeUndefined();
  });

  it('ranks tenant roles: admin > editor > viewer; a tenant key is 403 on operator routes', async () => {
    const viewer = await registry.issueKey(tenantId, 'viewer', undefined, metadata);
    const admin = await registry.issueKey(tenantId, 'admin', undefined, metadata);
    expect(await check('readers', requestWith(viewer.key))).toMatchObject({ tenantId, role: 'viewer' });
    await expect(check('editors', requestWith(viewer.key))).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(await check('editors', requestWith(admin.key))).toMatchObject({ role: 'admin' });
    await expect(check('operatorOnly', requestWith(admin.key))).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it('records X-Keel-User as the acting user, else the key id', async () => {
    const key = await registry.issueKey(tenantId, 'editor', 'backend', metadata);
    expect(await check('anyKey', requestWith(key.key, 'user-42'))).toMatchObject({
      keyId: key.id,
      userId: 'user-42',
    });
    expect(await check('anyKey', requestWith(key.key))).toMatchObject({ keyId: key.id, userId: key.id });
  });

  it('sees keys issued and revoked through another instance on the very next request', async () => {
    const other = instance();
    const key = await other.registry.issueKey(tenantId, 'viewer', undefined, metadata);
    expect(await check('readers', requestWith(key.key))).toMatchObject({ keyId: key.id });
    await other.registry.revokeKey(tenantId, key.id, metadata);
    await expect(check('readers', requestWith(key.key))).rejects.toBeInstanceOf(UnauthenticatedError);
  });

  it('checks X-Keel-User only once the key is known: an unknown key is 401 whatever the user', async () => {
    const key = await registry.issueKey(tenantId, 'viewer', undefined, metadata);
    const badUser = 'bad user\n';
    await expect(check('anyKey', requestWith('keel_unknown', badUser))).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    await expect(check('anyKey', requestWith(key.key, badUser))).rejects.toBeInstanceOf(ValidationError);
  });

  it('lists the tenant keys that work, with when each was last used and never a secret', async () => {
    const used = await registry.issueKey(tenantId, 'editor', 'backend', metadata);
    const unused = await registry.issueKey(tenantId, 'viewer', undefined, metadata);
    const revoked = await registry.issueKey(tenantId, 'viewer', undefined, metadata);
    await registry.revokeKey(tenantId, revoked.id, metadata);
    await check('anyKey', requestWith(used.key));
    const keys = await registry.listKeys(tenantId);
    expect(keys).toEqual([
      {
        id: used.id,
        role: 'editor',
        name: 'backend',
        createdAt: expect.any(String),
        lastUsedAt: expect.any(String),
      },
      { id: unused.id, role: 'viewer', name: null, createdAt: expect.any(String), lastUsedAt: null },
    ]);
    expect(JSON.stringify(keys)).not.toContain(used.key);
    await expect(registry.listKeys('constructor')).rejects.toThrow(/no tenant/);
  });

  it('opens nothing for keys or budgets logged on tenants that never existed (before own-key lookups)', async () => {
    const issuedAt = new Date().toISOString();
    await store.append('keel', 'tenants-registry', [
      { type: 'BudgetSet', data: { tenantId: '__proto__', monthlyUsd: 5, at: issuedAt } },
      {
        type: 'KeyIssued',
        data: {
          tenantId: 'constructor',
          keyId: 'k_stray',
          role: 'admin',
          keyHash: hashApiKey('keel_stray'),
          issuedAt,
        },
      },
    ]);
    const fresh = instance();
    await expect(check('anyKey', requestWith('keel_stray'), fresh.guard)).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    expect((await fresh.registry.listTenants()).map((tenant) => tenant.id)).toEqual([tenantId]);
  });
});
