import { KeelError, UnavailableError } from '@keel/core';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleInit } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { PendingApproval, RunningTurn } from './activity.js';
import { Activity } from './activity.js';

/** Events read per page of the global log. */
const PAGE = 1000;

/**
 * The gateway's in-process read model of what is happening now (Activity): pending approvals and
 * running turns of every tenant, folded from the global log in position order.
 *
 * Cost: the log is read once from the start when the gateway starts (in pages, in the
 * background), then each read catches up from the last position folded (one indexed range read,
 * usually empty), so a request never scans conversations. Freshness: a read answers with every
 * event committed and sequenced before it started. Concurrent callers share reads, but a caller
 * never shares a read that started before it arrived (as TenantDirectory).
 */
@Injectable()
export class ActivityProjection implements OnModuleInit {
  private readonly activity = new Activity();
  private position = 0;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;

  constructor(
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  onModuleInit(): void {
    this.catchUp().then(
      () => this.logger.info({ position: this.position }, 'activity projection loaded'),
      (error: unknown) => this.logger.warn({ err: error }, 'activity projection not loaded yet'),
    );
  }

  /** Pending approvals after a catch-up: one tenant's, or every tenant's. */
  async pendingApprovals(tenantId?: string): Promise<PendingApproval[]> {
    await this.catchUp();
    return this.activity.pendingApprovals(tenantId);
  }

  /** Client tool calls waiting for their client after a catch-up: one tenant's, or every tenant's. */
  async clientCallsPending(tenantId?: string): Promise<number> {
    await this.catchUp();
    return this.activity.clientCallsPending(tenantId);
  }

  /** Running turns after a catch-up: one tenant's, or every tenant's. */
  async runningTurns(tenantId?: string): Promise<RunningTurn[]> {
    await this.catchUp();
    return this.activity.runningTurns(tenantId);
  }

  /** The global log position folded so far: after a catch-up, the head of the log. */
  get headPosition(): number {
    return this.position;
  }

  /** Folds every event sequenced before this call. */
  catchUp(): Promise<void> {
    if (!this.running) {
      this.running = this.readNew().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.catchUp();
      });
    return this.queued;
  }

  private async readNew(): Promise<void> {
    try {
      for (;;) {
        const page = await this.infra.store.readAll({
          scope: 'all-tenants',
          after: this.position,
          limit: PAGE,
        });
        for (const event of page.events) this.activity.apply(event);
        if (page.events.length === 0 || page.lastPosition <= this.position) return;
        this.position = page.lastPosition;
      }
    } catch (error) {
      if (error instanceof KeelError) throw error;
      this.logger.error({ err: error }, 'event log unreadable');
      throw new UnavailableError('the event log cannot be read now', { cause: error });
    }
  }
}
