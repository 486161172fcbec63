// Two gateway instances' tenant directories on real MongoDB and NATS (each with its own
// infrastructure, as two processes would have): auth trusts the fold while the bus's watch vouches
// for it, and a key revoked through one instance stops working on the other without a read.
import { UnauthenticatedError } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { createInfrastructure, createLogger, loadConfig } from '@keel/runtime';
import { mongoUrlFor, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Authenticator } from '../auth/authenticator.js';
import { TenantDirectory } from './tenant-directory.js';
import { TenantRegistryService } from './tenant-registry.service.js';

const silent = createLogger('gateway', { level: 'silent' });

interface Instance {
  infra: Infrastructure;
  directory: TenantDirectory;
  registry: TenantRegistryService;
  auth: Authenticator;
}

const instances: Instance[] = [];

beforeAll(async () => {
  const { natsUrl, mongoUrl } = testInfra();
  const env = {
    MONGODB_URL: mongoUrlFor(uniqueName('tenant_directory'), mongoUrl),
    NATS_URL: natsUrl,
    KEEL_NATS_STREAM: uniqueName('DIRECTORY'),
    KEEL_SUBJECT_PREFIX: `test.${uniqueName('directory')}`,
    LOG_LEVEL: 'silent',
  };
  for (let i = 0; i < 2; i++) {
    const infra = await createInfrastructure(loadConfig('gateway', env), silent);
    const directory = new TenantDirectory(infra, silent);
    await directory.onModuleInit();
    instances.push({
      infra,
      directory,
      registry: new TenantRegistryService(infra, directory),
      auth: new Authenticator(directory, undefined),
    });
  }
});

afterAll(async () => {
  for (const { directory, infra } of instances) {
    directory.onModuleDestroy();
    await infra.close();
  }
});

describe('TenantDirectory on two gateway instances', () => {
  it('a key issued on one works on the other, authenticates without a read of the log per request, and once revoked on one is refused on the other', async () => {
    const [a, b] = instances as [Instance, Instance];
    const tenant = await a.registry.createTenant('Acme', {});
    const issued = await a.registry.issueKey(tenant.id, 'editor', undefined, {});
    const bearer = `Bearer ${issued.key}`;
    await expect
      .poll(
        () =>
          b.auth.authenticate(bearer, undefined).then(
            () => true,
            () => false,
          ),
        {
          timeout: 500,
          interval: 5,
        },
      )
      .toBe(true);

    const readsOfB = vi.spyOn(b.infra.store, 'read');
    for (let i = 0; i < 20; i++) {
      expect(await b.auth.authenticate(bearer, undefined)).toMatchObject({ tenantId: tenant.id });
    }
    expect(readsOfB).not.toHaveBeenCalled();

    await a.registry.revokeKey(tenant.id, issued.id, {});
    // The writer folded its own commit: refused there at once.
    await expect(a.auth.authenticate(bearer, undefined)).rejects.toBeInstanceOf(UnauthenticatedError);
    // The other instance got the event from NATS when the writer did (give its socket a moment).
    const refusedOnB = Date.now();
    await expect
      .poll(
        () =>
          b.auth.authenticate(bearer, undefined).then(
            () => 'ok',
            () => 'refused',
          ),
        {
          timeout: 500,
          interval: 2,
        },
      )
      .toBe('refused');
    expect(Date.now() - refusedOnB).toBeLessThan(100);
    await expect(b.auth.authenticate(bearer, undefined)).rejects.toBeInstanceOf(UnauthenticatedError);
    // Folded from the bus: the other instance never read the log for it.
    expect(readsOfB).not.toHaveBeenCalled();
    readsOfB.mockRestore();
  });
});
