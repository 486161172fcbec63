import type { RecordedEvent, WatchedStreams, WatchMark } from '@keel/core';
import { asDecided, HeardVersions, KeelError, ownValue, UnavailableError } from '@keel/core';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
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

/** How long a registry write waits to see its own event arrive on the bus before answering anyway. */
export const REGISTRY_PUBLISH_WAIT_MS = 2_000;

/** How long a read waits for the registry's watch to be live before reading without it (NATS stuck). */
const WATCH_LIVE_WAIT_MS = 1_000;

/**
 * The gateway's in-process read model of the tenant registry: tenants, and keys by hash for auth.
 *
 * Freshness, with the bus's watch (WatchedStreams): `catchUp()` trusts the folded state while the
 * watch vouches for it (live before the last read of the log, no newer registry event seen on the
 * bus since, that read under KEEL_WATCH_MAX_AGE_MS old), and otherwise reads the registry stream
 * after the version folded. Registry events seen on the bus that directly follow the fold are
 * folded as they arrive (versions are dense, a published event is committed). So auth reads the
 * log at most once per max age, plus once after a registry change it did not fold from the bus.
 *
 * "The key stops working at once" (API.md), precisely: the gateway that handles a registry write
 * (a revocation) folds its own commit before answering, and waits (at most
 * REGISTRY_PUBLISH_WAIT_MS) until its own watch has received the commit's event from NATS; every
 * other gateway instance is subscribed to the same subject on the same server, which sends it to
 * all of them as it takes it, so a request that reaches any instance after the 204 is refused
 * (unless that instance has not yet handled a message already on its socket: a millisecond or
 * so). The failure case: a publish lost (NATS down, or an instance disconnected and missing it)
 * leaves another instance trusting its fold until its last read is KEEL_WATCH_MAX_AGE_MS old
 * (5 s by default): the revocation then takes at most that long there; the writer logs a
 * warning when it answered without seeing its event. Without a watch (fast path off, no bus)
 * every `catchUp()` reads, as before: then at once means the next request, on any instance.
 * Concurrent callers share reads, but a caller never shares a read that started before it arrived.
 */
@Injectable()
export class TenantDirectory implements OnModuleInit, OnModuleDestroy {
  private state: TenantRegistry = tenantRegistryDecider.initialState();
  private folded = 0;
  private readonly byHash = new Map<string, KeyEntry>();
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** The highest registry version seen on this process's watch, and who waits for one. */
  private readonly heard = new HeardVersions();
  private watching: { unsubscribe(): void } | undefined;

  constructor(
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
    /** How long a write waits to see its event on the bus (tests shorten it). */
    private readonly publishWaitMs = REGISTRY_PUBLISH_WAIT_MS,
  ) {}

  /** Watches the registry on the bus, then rebuilds the read model from the log before the gateway serves. */
  async onModuleInit(): Promise<void> {
    if (this.watched) {
      // Subscribed before WatchedStreams' watch, whose round trip then makes both live.
      this.watching = this.infra.bus.watch?.(
        { tenantId: PLATFORM_TENANT_ID, streamName: TENANT_REGISTRY_STREAM },
        (event) => this.onWatched(event),
      );
    }
    await this.catchUp();
    this.logger.info(
      { tenants: Object.keys(this.state.tenants).length, keys: this.byHash.size, version: this.folded },
      'tenant directory loaded',
    );
  }

  onModuleDestroy(): void {
    this.watching?.unsubscribe();
    this.heard.close();
  }

  /** The registry version folded so far. */
  get version(): number {
    return this.folded;
  }

  /**
   * Brings the fold up to date: at once when the watch vouches for it (see the class comment),
   * else by reading every registry event committed before this call.
   */
  catchUp(): Promise<void> {
    const watched = this.watched;
    if (watched?.isCurrentAt(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, this.folded)) {
      return Promise.resolve();
    }
    return this.read();
  }

  /**
   * After this process committed registry events: folds them at once (reading the log if it was
   * behind them), then waits until the watch has received the last of them from the bus, at most
   * `publishWaitMs` (see the class comment for what that makes of "at once").
   */
  async written(events: readonly RecordedEvent[]): Promise<void> {
    const last = events.at(-1)?.version;
    if (last === undefined) return;
    for (const event of events) this.apply(event);
    if (this.folded < last) await this.read();
    if (!this.watching) return;
    if (!(await this.heard.waitFor(last, this.publishWaitMs))) {
      this.logger.warn(
        { version: last, waitedMs: this.publishWaitMs },
        'registry write not seen on the bus: other gateways see it within KEEL_WATCH_MAX_AGE_MS',
      );
    }
  }

  /** Folds every registry event committed before this call (a caller never shares an older read). */
  private read(): Promise<void> {
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
        return this.read();
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

  /** The process's watched streams, when the bus watches (not in unit tests without one). */
  private get watched(): WatchedStreams | undefined {
    const watched = this.infra.watched as WatchedStreams | undefined;
    return watched?.enabled ? watched : undefined;
  }

  private async readNew(): Promise<void> {
    const mark = await this.watchMark();
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
    // The log was read to the fold (an event out of line would leave it behind: not vouched for).
    const readTo = events.at(-1)?.version ?? this.folded;
    if (readTo === this.folded) {
      this.watched?.verified(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, readTo, mark);
    }
  }

  /** The watch's mark for a read about to start; none (the read vouches for nothing) if not live soon. */
  private async watchMark(): Promise<WatchMark | undefined> {
    const watched = this.watched;
    if (!watched) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), WATCH_LIVE_WAIT_MS).unref();
    });
    try {
      return await Promise.race([watched.watch(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A registry event seen on the bus: folded when it follows the fold, and counted as heard. */
  private onWatched(event: RecordedEvent): void {
    if (event.tenantId !== PLATFORM_TENANT_ID || event.streamName !== TENANT_REGISTRY_STREAM) return;
    this.apply(event);
    this.heard.hear(event.version);
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
