import type { RecordedEvent } from '@keel/core';
import { asDecided, KeelError, ownValue, UnavailableError } from '@keel/core';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleInit } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { RegisteredTenant, TenantRegistry } from './tenant-registry.decider.js';
import { registeredTenant, tenantRegistryDecider } from './tenant-registry.decider.js';
import type { KeyRole, TenantRegistryEvent } from './tenant-registry.events.js';
import { PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM } from './tenant-registry.events.js';

/** What a key hash resolves to. */
export interface KeyEntry {
  tenantId: string;
  keyId: string;
  role: KeyRole;
  keyHash: string;
  revoked: boolean;
}

/**
 * The gateway's in-process read model of the tenant registry: tenants, and keys by hash for auth.
 *
 * Freshness: `catchUp()` reads the registry stream after the version this process has folded (one
 * indexed point read, usually empty), and auth calls it on every request before trusting a key.
 * A revocation is committed to the store before its DELETE answers 204, so any request that
 * starts after that answer, on any gateway instance, sees it: the key stops working at once.
 * The bus is not used for this: its delivery (via the outbox relay) lags the commit, so it could
 * not give "at once". Concurrent callers share reads, but a caller never shares a read that
 * started before it arrived.
 */
@Injectable()
export class TenantDirectory implements OnModuleInit {
  private state: TenantRegistry = tenantRegistryDecider.initialState();
  private folded = 0;
  private readonly byHash = new Map<string, KeyEntry>();
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  /** Rebuilds the read model from the log before the gateway serves. */
  async onModuleInit(): Promise<void> {
    await this.catchUp();
    this.logger.info(
      { tenants: Object.keys(this.state.tenants).length, keys: this.byHash.size, version: this.folded },
      'tenant directory loaded',
    );
  }

  /** The registry version folded so far. */
  get version(): number {
    return this.folded;
  }

  /** Folds every registry event committed before this call. */
  catchUp(): Promise<void> {
    if (!this.running) {
      this.running = this.readNew().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    // A read is in flight, but it may have started before this caller: wait for the next one.
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.catchUp();
      });
    return this.queued;
  }

  /** The key with this hash, as of the last catch-up. */
  keyByHash(keyHash: string): KeyEntry | undefined {
    return this.byHash.get(keyHash);
  }

  /** A tenant, as of the last catch-up. */
  tenant(tenantId: string): RegisteredTenant | undefined {
    return registeredTenant(this.state, tenantId);
  }

  /** Every tenant in creation order, as of the last catch-up (only entries that are tenants). */
  tenants(): RegisteredTenant[] {
    return Object.entries(this.state.tenants).flatMap(([id, tenant]) => (tenant.id === id ? [tenant] : []));
  }

  private async readNew(): Promise<void> {
    let events: RecordedEvent[];
    try {
      events = await this.infra.store.read(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, {
        fromVersion: this.folded + 1,
      });
    } catch (error) {
      if (error instanceof KeelError) throw error;
      // Auth fails closed, and says so as 503 (retry later), not as a 500.
      this.logger.error({ err: error }, 'tenant registry unreadable');
      throw new UnavailableError('the tenant registry cannot be read now', { cause: error });
    }
    for (const event of events) this.apply(event);
  }

  private apply(recorded: RecordedEvent): void {
    if (recorded.version !== this.folded + 1) return;
    const event = asDecided<TenantRegistryEvent>(recorded);
    this.state = tenantRegistryDecider.evolve(this.state, event);
    this.folded = recorded.version;
    if (event.type === 'KeyIssued') {
      const { tenantId, keyId, role, keyHash } = event.data;
      // A key the registry did not take (e.g. logged for a tenant that never existed) opens nothing.
      const tenant = registeredTenant(this.state, tenantId);
      if (!tenant || ownValue(tenant.keys, keyId)?.keyHash !== keyHash) return;
      this.byHash.set(keyHash, { tenantId, keyId, role, keyHash, revoked: false });
    } else if (event.type === 'KeyRevoked') {
      const tenant = registeredTenant(this.state, event.data.tenantId);
      const keyHash = tenant && ownValue(tenant.keys, event.data.keyId)?.keyHash;
      const entry = keyHash === undefined ? undefined : this.byHash.get(keyHash);
      if (entry) entry.revoked = true;
    }
  }
}
