import type { EventStore, RecordedEvent } from '@keel/core';
import { isEvent } from '@keel/core';

/** The platform's own tenant, under which the gateway keeps the tenant registry. */
const PLATFORM_TENANT_ID = 'keel';

/** The registry stream the gateway appends tenants, keys and budgets to. */
const TENANT_REGISTRY_STREAM = 'tenants-registry';

/**
 * The one registry event the agent reads, redeclared here (services do not import each other):
 * the gateway's `BudgetSet` of `PUT /v1/tenants/{id}/budget`.
 */
interface RegistryBudgetSet {
  type: 'BudgetSet';
  data: { tenantId: string; monthlyUsd: number; at: string };
}

/** Settings of the directory. */
export interface BudgetDirectoryOptions {
  /** A read younger than this is reused (default 1000 ms): a budget set applies within this. */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * The tenants' monthly budgets, folded from the tenant registry stream. The registry is read after
 * the version folded so far (one point read, usually empty), at most once per `maxAgeMs`, and
 * concurrent callers share the read in flight: admission costs one cached read when no budget is set.
 */
export class BudgetDirectory {
  private readonly budgets = new Map<string, number>();
  private folded = 0;
  private readAt = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | undefined;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: EventStore,
    options: BudgetDirectoryOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /** The tenant's monthly budget in USD, or undefined when none is set (unlimited). */
  async monthlyUsdOf(tenantId: string): Promise<number | undefined> {
    if (this.now() - this.readAt >= this.maxAgeMs) await this.catchUp();
    return this.budgets.get(tenantId);
  }

  private catchUp(): Promise<void> {
    this.running ??= this.readNew().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async readNew(): Promise<void> {
    const startedAt = this.now();
    const events = await this.store.read(PLATFORM_TENANT_ID, TENANT_REGISTRY_STREAM, {
      fromVersion: this.folded + 1,
    });
    for (const event of events) this.apply(event);
    this.readAt = startedAt;
  }

  private apply(recorded: RecordedEvent): void {
    if (recorded.version !== this.folded + 1) return;
    this.folded = recorded.version;
    if (!isEvent<RegistryBudgetSet>(recorded, 'BudgetSet')) return;
    const { tenantId, monthlyUsd } = recorded.data;
    this.budgets.set(tenantId, monthlyUsd);
  }
}
