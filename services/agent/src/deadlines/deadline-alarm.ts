import type { Deadline, Deadlines } from './deadlines.js';
import { deadlineKeyOf } from './deadlines.js';

/** What the alarm works with. */
export interface DeadlineAlarmDeps {
  deadlines: Deadlines;
  /** Called at (or after) a deadline; its owner removes the deadline (`clear`) once dealt with. */
  onDue: (deadline: Deadline) => Promise<void>;
  /** Told when `onDue` fails (the deadline stays and fires again at the next poll). */
  onError: (deadline: Deadline, error: unknown) => void;
  /** How often the stored deadlines are read again (other instances' ones, retries). Default 5 s. */
  pollMs?: number;
  clock?: () => number;
}

/**
 * Durable timers: a deadline is stored before it is armed, every instance reads all stored
 * deadlines at start and again every `pollMs`, and fires each one due that it is not already
 * firing. So a deadline fires after any restart and even when the instance that armed it died;
 * it may fire on several instances or more than once, so `onDue` must be idempotent (the
 * deciders it ends in refuse a second resolution). A deadline fires until its owner clears it.
 */
export class DeadlineAlarm {
  private readonly timers = new Map<string, { dueAt: string; timer: NodeJS.Timeout }>();
  private readonly firing = new Set<string>();
  private poller: NodeJS.Timeout | undefined;
  private readonly clock: () => number;

  constructor(private readonly deps: DeadlineAlarmDeps) {
    this.clock = deps.clock ?? Date.now;
  }

  /** Arms every stored deadline and starts polling. */
  async start(): Promise<void> {
    await this.poll();
    this.poller = setInterval(() => {
      this.poll().catch(() => undefined);
    }, this.deps.pollMs ?? 5_000);
    this.poller.unref();
  }

  stop(): void {
    clearInterval(this.poller);
    this.poller = undefined;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Stores a deadline and arms it here (a deadline stored already stays as it was). */
  async set(deadline: Deadline): Promise<void> {
    await this.deps.deadlines.record(deadline);
    this.arm(deadline);
  }

  /** Whether this instance has the deadline armed. */
  isArmed(tenantId: string, id: string): boolean {
    return this.timers.has(deadlineKeyOf(tenantId, id));
  }

  /** Forgets a deadline that no longer matters. */
  async clear(tenantId: string, id: string): Promise<void> {
    const key = deadlineKeyOf(tenantId, id);
    clearTimeout(this.timers.get(key)?.timer);
    this.timers.delete(key);
    await this.deps.deadlines.remove(tenantId, id);
  }

  private async poll(): Promise<void> {
    for (const deadline of await this.deps.deadlines.all()) this.arm(deadline);
  }

  private arm(deadline: Deadline): void {
    const key = deadlineKeyOf(deadline.tenantId, deadline.id);
    if (this.timers.has(key) || this.firing.has(key)) return;
    const delay = Math.max(0, Date.parse(deadline.dueAt) - this.clock());
    const timer = setTimeout(() => void this.fire(key, deadline), Math.min(delay + 10, 2_147_000_000));
    timer.unref();
    this.timers.set(key, { dueAt: deadline.dueAt, timer });
  }

  private async fire(key: string, deadline: Deadline): Promise<void> {
    this.timers.delete(key);
    this.firing.add(key);
    try {
      await this.deps.onDue(deadline);
    } catch (error) {
      this.deps.onError(deadline, error);
    } finally {
      this.firing.delete(key);
    }
  }
}
