/**
 * Where each (hook, stream) lane's cursor lives (hook-policy.ts): MongoDB in production, memory in
 * dev mode and unit specs; both pass hook-lanes.contract.ts. A lane is worked by one process at
 * a time (a lease); a process that dies holds it until the lease runs out.
 */
export interface LaneKey {
  tenantId: string;
  hook: string;
  streamName: string;
}

/** A lane as stored. */
export interface HookLane extends LaneKey {
  id: string;
  /** The last version of the stream settled for the hook. */
  cursor: number;
  /** The highest version known to hold an event the hook subscribes to. */
  target: number;
  /** Failed attempts of the event after the cursor. */
  attempts: number;
  /** Not before this time (ms since the epoch): the backoff of a failed attempt. */
  retryAt: number;
}

export interface HookLaneStore {
  /**
   * Tells the lane an event at `version` awaits it: creates the lane with its cursor just before
   * `version` (a new hook is not sent older events), else raises its target.
   */
  touch(key: LaneKey, version: number): Promise<void>;
  /** Leases up to `limit` lanes with work due (cursor below target, retry time passed, no live lease) to `owner`. */
  claim(owner: string, now: number, leaseMs: number, limit: number): Promise<HookLane[]>;
  /** Moves the cursor (and clears attempts) of a lane `owner` holds; false when it no longer holds it. */
  advance(id: string, owner: string, cursor: number): Promise<boolean>;
  /**
   * Records a failed attempt of the event just after `cursor` (the events before it are settled):
   * `attempts` so far, not retried before `retryAt`. False when `owner` no longer holds the lane.
   */
  failed(id: string, owner: string, cursor: number, attempts: number, retryAt: number): Promise<boolean>;
  /** Extends the lease `owner` holds; false when it no longer holds it. */
  renew(id: string, owner: string, until: number): Promise<boolean>;
  /** Gives the lane back (lease ended now). */
  release(id: string, owner: string): Promise<void>;
}

/** The id of a lane: one per tenant, hook and stream. */
export const laneId = (key: LaneKey): string => JSON.stringify([key.tenantId, key.hook, key.streamName]);

interface Stored extends HookLane {
  owner?: string;
  leaseUntil: number;
}

/** Lanes in memory (dev mode, unit specs). */
export class InMemoryHookLaneStore implements HookLaneStore {
  readonly #lanes = new Map<string, Stored>();

  async touch(key: LaneKey, version: number): Promise<void> {
    const id = laneId(key);
    const lane = this.#lanes.get(id);
    if (!lane) {
      this.#lanes.set(id, {
        ...key,
        id,
        cursor: version - 1,
        target: version,
        attempts: 0,
        retryAt: 0,
        leaseUntil: 0,
      });
    } else lane.target = Math.max(lane.target, version);
  }

  async claim(owner: string, now: number, leaseMs: number, limit: number): Promise<HookLane[]> {
    const claimed: HookLane[] = [];
    for (const lane of this.#lanes.values()) {
      if (claimed.length >= limit) break;
      if (lane.cursor >= lane.target || lane.retryAt > now || lane.leaseUntil > now) continue;
      lane.owner = owner;
      lane.leaseUntil = now + leaseMs;
      claimed.push(view(lane));
    }
    return claimed;
  }

  async advance(id: string, owner: string, cursor: number): Promise<boolean> {
    const lane = this.#held(id, owner);
    if (!lane) return false;
    lane.cursor = Math.max(lane.cursor, cursor);
    lane.attempts = 0;
    lane.retryAt = 0;
    return true;
  }

  async failed(
    id: string,
    owner: string,
    cursor: number,
    attempts: number,
    retryAt: number,
  ): Promise<boolean> {
    const lane = this.#held(id, owner);
    if (!lane) return false;
    lane.cursor = Math.max(lane.cursor, cursor);
    lane.attempts = attempts;
    lane.retryAt = retryAt;
    return true;
  }

  async renew(id: string, owner: string, until: number): Promise<boolean> {
    const lane = this.#held(id, owner);
    if (lane) lane.leaseUntil = until;
    return lane !== undefined;
  }

  async release(id: string, owner: string): Promise<void> {
    const lane = this.#held(id, owner);
    if (lane) {
      lane.leaseUntil = 0;
      delete lane.owner;
    }
  }

  #held(id: string, owner: string): Stored | undefined {
    const lane = this.#lanes.get(id);
    return lane?.owner === owner ? lane : undefined;
  }
}

const view = ({ owner: _owner, leaseUntil: _lease, ...lane }: Stored): HookLane => ({ ...lane });
