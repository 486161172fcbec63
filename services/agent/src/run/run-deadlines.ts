/** A running run's deadline, kept so that its timeout fires after a restart too. */
export interface RunDeadline {
  tenantId: string;
  runId: string;
  dueAt: string;
}

/**
 * The deadlines of the runs that have not ended: recorded when a run is first seen running,
 * dropped when it ends, and all read when the run manager starts, to arm its timers again.
 */
export interface RunDeadlines {
  record(deadline: RunDeadline): Promise<void>;
  remove(tenantId: string, runId: string): Promise<void>;
  all(): Promise<RunDeadline[]>;
}

/** The key of a run's deadline. */
export const deadlineKeyOf = (tenantId: string, runId: string): string => `${tenantId}|${runId}`;

/** In memory (dev mode, unit tests): lost with the process, as the in-memory log is. */
export class InMemoryRunDeadlines implements RunDeadlines {
  private readonly entries = new Map<string, RunDeadline>();

  record(deadline: RunDeadline): Promise<void> {
    this.entries.set(deadlineKeyOf(deadline.tenantId, deadline.runId), deadline);
    return Promise.resolve();
  }

  remove(tenantId: string, runId: string): Promise<void> {
    this.entries.delete(deadlineKeyOf(tenantId, runId));
    return Promise.resolve();
  }

  all(): Promise<RunDeadline[]> {
    return Promise.resolve([...this.entries.values()]);
  }
}
