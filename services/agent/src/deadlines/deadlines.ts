/** A moment something must be looked at again (a run's timeout, a client call's deadline). */
export interface Deadline {
  tenantId: string;
  /** What is due, in its owner's words (a run id; `<conversationId>/<toolCallId>`). */
  id: string;
  dueAt: string;
}

/**
 * Deadlines kept next to the log, so that they fire after a restart and on any instance:
 * recorded when armed, removed by their owner when no longer needed, all read by every instance.
 */
export interface Deadlines {
  record(deadline: Deadline): Promise<void>;
  remove(tenantId: string, id: string): Promise<void>;
  all(): Promise<Deadline[]>;
}

/** The key of a deadline. */
export const deadlineKeyOf = (tenantId: string, id: string): string => `${tenantId}|${id}`;

/** In memory (dev mode, unit tests): lost with the process, as the in-memory log is. */
export class InMemoryDeadlines implements Deadlines {
  private readonly entries = new Map<string, Deadline>();

  record(deadline: Deadline): Promise<void> {
    this.entries.set(deadlineKeyOf(deadline.tenantId, deadline.id), deadline);
    return Promise.resolve();
  }

  remove(tenantId: string, id: string): Promise<void> {
    this.entries.delete(deadlineKeyOf(tenantId, id));
    return Promise.resolve();
  }

  all(): Promise<Deadline[]> {
    return Promise.resolve([...this.entries.values()]);
  }
}
