import type { EphemeralSubscription, EphemeralTopic, EventBus } from '@keel/core';
import { uuidv7 } from '@keel/core';

/**
 * A claim notice (ephemeral kind `claims`, the conversation's topic): `holder` runs step `step`
 * of turn `turnId` and renews the notice while it does; `released` once the step is recorded
 * (or given up). Heard by every agent instance; `ttlMs` after the last notice it lapses.
 */
interface ClaimNotice {
  turnId: string;
  step: number;
  holder: string;
  ttlMs: number;
  released?: true;
}

/** Another instance's live claim, as this instance heard it. */
interface HeardClaim {
  turnId: string;
  step: number;
  holder: string;
  /** When it lapses unless renewed (this process's clock: no clocks are compared); once released, when it is forgotten. */
  lapseAt: number;
  /** Released: the step is recorded (remembered a while for its trigger's late deliveries). */
  released: boolean;
  /** Wakes the deliveries waiting for it (released, replaced). */
  waiters: Set<() => void>;
}

/** Claims one instance holds: the release of each. */
export type ReleaseClaim = () => void;

/** How long a claim lives without renewal. Default 3 s: a dead starter's turn waits that long. */
export const DEFAULT_CLAIM_TTL_MS = 3_000;

/**
 * How long a released claim is remembered: a delivery of its trigger that comes later (the
 * durable consumer busy) must still read the log, not run on a state this process remembers at
 * the trigger's version (the step is recorded since, elsewhere).
 */
const REMEMBER_RELEASED_MS = 60_000;

const keyOf = (tenantId: string, conversationId: string): string => `${tenantId}/${conversationId}`;

const isNotice = (data: unknown): data is ClaimNotice => {
  if (typeof data !== 'object' || data === null) return false;
  const notice = data as Partial<ClaimNotice>;
  return (
    typeof notice.turnId === 'string' &&
    typeof notice.step === 'number' &&
    typeof notice.holder === 'string' &&
    typeof notice.ttlMs === 'number'
  );
};

/**
 * Which agent instance runs a turn's next model step, told beside the log so no second
 * instance pays for the same model call. An instance that commits a step's trigger itself runs
 * that step at once and claims it here before the commit is published; another instance the
 * durable consumer hands the trigger holds it (`whileClaimed`) until the claim is released (the
 * step recorded: its fresh load finds nothing due) or lapses (no renewal for `ttlMs`: the holder
 * died, and the held delivery runs the step). A claim never decides anything: the log and the
 * decider's expected version do; a claim not heard in time costs a second model call, which the
 * holder sees (`claimedByOther`) and reports.
 */
export class StepClaims {
  /** This instance's name on its notices. */
  readonly holder = uuidv7();
  private readonly heard = new Map<string, HeardClaim>();
  private subscription: EphemeralSubscription | undefined;
  private sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly bus: Pick<EventBus, 'ephemeral'>,
    readonly ttlMs: number = DEFAULT_CLAIM_TTL_MS,
  ) {}

  start(): void {
    this.subscription = this.bus.ephemeral.subscribe({ kind: 'claims' }, ({ topic, data }) => {
      if (isNotice(data) && data.holder !== this.holder) this.hear(topic, data);
    });
    // Claims whose release was missed (ephemeral) are forgotten once lapsed.
    this.sweeper = setInterval(() => this.sweep(), this.ttlMs);
    this.sweeper.unref();
  }

  stop(): void {
    this.subscription?.unsubscribe();
    clearInterval(this.sweeper);
    for (const claim of this.heard.values()) wake(claim);
    this.heard.clear();
  }

  /** Claims step `step` of `turnId` for this instance: told now, renewed until released. */
  claim(tenantId: string, conversationId: string, turnId: string, step: number): ReleaseClaim {
    const topic: EphemeralTopic = { kind: 'claims', tenantId, conversationId };
    const notice: ClaimNotice = { turnId, step, holder: this.holder, ttlMs: this.ttlMs };
    this.bus.ephemeral.publish(topic, notice);
    const renewal = setInterval(() => this.bus.ephemeral.publish(topic, notice), this.ttlMs / 3);
    renewal.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(renewal);
      this.bus.ephemeral.publish(topic, { ...notice, released: true });
    };
  }

  /**
   * Waits while another instance claims a step of `turnId` in the conversation: until it is
   * released, replaced by a claim of another turn, or lapses. True when there was such a claim
   * (what this instance remembers of the conversation may then be behind: the step recorded).
   */
  async whileClaimed(tenantId: string, conversationId: string, turnId: string | undefined): Promise<boolean> {
    const key = keyOf(tenantId, conversationId);
    let claimed = false;
    for (;;) {
      const claim = this.heard.get(key);
      if (!claim || claim.turnId !== turnId) return claimed;
      claimed = true;
      if (claim.released) return claimed;
      const left = claim.lapseAt - Date.now();
      if (left <= 0) {
        this.forget(key, claim);
        return claimed;
      }
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          claim.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        claim.waiters.add(done);
      });
    }
  }

  /** Whether another instance claims step `step` of `turnId` now (both run it: one call is wasted). */
  claimedByOther(tenantId: string, conversationId: string, turnId: string, step: number): boolean {
    const claim = this.heard.get(keyOf(tenantId, conversationId));
    return (
      claim !== undefined &&
      !claim.released &&
      claim.turnId === turnId &&
      claim.step === step &&
      claim.lapseAt > Date.now()
    );
  }

  private hear(topic: EphemeralTopic, notice: ClaimNotice): void {
    const key = keyOf(topic.tenantId, topic.conversationId);
    const current = this.heard.get(key);
    const same =
      current !== undefined &&
      current.holder === notice.holder &&
      current.turnId === notice.turnId &&
      current.step === notice.step;
    if (notice.released) {
      if (!same) return;
      current.released = true;
      current.lapseAt = Date.now() + REMEMBER_RELEASED_MS;
      wake(current);
      return;
    }
    if (same) {
      if (!current.released) current.lapseAt = Date.now() + notice.ttlMs;
      return;
    }
    // A conversation runs one step at a time: a newer claim replaces the one heard before.
    if (current) this.forget(key, current);
    const { turnId, step, holder, ttlMs } = notice;
    const lapseAt = Date.now() + ttlMs;
    this.heard.set(key, { turnId, step, holder, lapseAt, released: false, waiters: new Set() });
  }

  private forget(key: string, claim: HeardClaim): void {
    if (this.heard.get(key) === claim) this.heard.delete(key);
    wake(claim);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, claim] of this.heard) if (claim.lapseAt <= now) this.forget(key, claim);
  }
}

const wake = (claim: HeardClaim): void => {
  for (const done of [...claim.waiters]) done();
};
