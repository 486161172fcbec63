import type { PlacedPage } from '../event-store/index.js';

/** Durable positions of catch-up readers (the outbox relay, projections). */
export interface CheckpointStore {
  load(name: string): Promise<number>;
  /** Saves a position; never moves a checkpoint backwards. */
  save(name: string, position: number): Promise<void>;
}

/**
 * A named lease with a time to live, so that one process at a time does a job (the relay).
 * Correctness never depends on it (the sequencer is fenced, publishes are deduplicated): it only
 * saves duplicate work.
 */
export interface LeaseStore {
  /** Takes or renews the lease for `owner`; false when another owner holds an unexpired lease. */
  tryAcquire(name: string, owner: string, ttlMs: number): Promise<boolean>;
  release(name: string, owner: string): Promise<void>;
}

/** Checkpoints in process memory (dev mode). */
export class InMemoryCheckpointStore implements CheckpointStore {
  private readonly positions = new Map<string, number>();
  async load(name: string): Promise<number> {
    return this.positions.get(name) ?? 0;
  }
  async save(name: string, position: number): Promise<void> {
    this.positions.set(name, Math.max(position, this.positions.get(name) ?? 0));
  }
}

/** Leases in process memory (dev mode: one process, but the same semantics). */
export class InMemoryLeaseStore implements LeaseStore {
  private readonly leases = new Map<string, { owner: string; until: number }>();
  async tryAcquire(name: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    const current = this.leases.get(name);
    if (current && current.owner !== owner && current.until > now) return false;
    this.leases.set(name, { owner, until: now + ttlMs });
    return true;
  }
  async release(name: string, owner: string): Promise<void> {
    if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
  }
}

/**
 * How the processes sharing a log tell each other of each page they placed in the global log:
 * the relay that holds the lease publishes it at once (from the notice, without reading the log),
 * and every sequencer learns where the log ends. Best effort: a lost notice only delays publishing
 * until the holder's idle poll, and costs a sequencer one probe of the log.
 */
export interface RelayWakeups {
  /** Tells every listening relay of every other process that this process placed `page`. */
  notify(page?: PlacedPage): void;
  /** Calls `onWake` on every notice from another process (the page, when it came whole); returns the way to stop. */
  listen(onWake: (page?: PlacedPage) => void): () => void;
}
