import { createHash, randomUUID } from 'node:crypto';
import type { Consumer, Delivery, EventBus, EventStore, RecordedEvent } from '@keel/core';
import { ERASED_EVENT_TYPE, parseStreamName, uuidv7 } from '@keel/core';
import type { HookDefinition, SealedSecret } from '@keel/events';
import { CONVERSATION_CATEGORY } from '@keel/events';
import type { KeelLogger, SecretBox } from '@keel/runtime';
import type { HookLane, HookLaneStore } from './hook-lanes.js';
import type { RetrySchedule } from './hook-policy.js';
import {
  afterFailure,
  answerData,
  deadLetterEvent,
  hookBody,
  hookEventName,
  hookOfDeadLetter,
  hookWants,
  hooksFor,
} from './hook-policy.js';
import type { HookAnswer, HookSender } from './hook-sender.js';

/** Durable name of the tools service's consumer that opens hook lanes. */
export const HOOK_CONSUMER = 'hooks';

/** What the deliveries work with (ports; the module wires MongoDB, NATS, the guarded sender). */
export interface HookDeliveriesDeps {
  store: EventStore;
  bus: EventBus;
  lanes: HookLaneStore;
  send: HookSender;
  /** The tenant's hooks and sealed webhook secret, as of now. */
  tenantHooks(
    tenantId: string,
  ): Promise<{ hooks: Readonly<Record<string, HookDefinition>>; webhookSecret?: SealedSecret }>;
  /** Opens the webhook secret that signs deliveries; without it signed tenants' deliveries fail. */
  secrets?: Pick<SecretBox, 'open'>;
  logger: KeelLogger;
  now?: () => number;
}

/** Settings; the defaults suit production. */
export interface HookDeliveriesOptions {
  schedule: RetrySchedule;
  /** How long a lane stays with this process without a renewal (default 30 s). */
  leaseMs?: number;
  /** How often lanes due are looked for (default 1 s; a new event wakes the worker at once). */
  pollMs?: number;
  /** Lanes worked at once by this process (default 16). */
  maxLanes?: number;
}

/** A UUID derived from `parts`: the same parts always give the same id (idempotent appends and records). */
export const derivedUuid = (...parts: string[]): string => {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/**
 * Delivers durable events to hooks (API.md "Hooks"; policy in hook-policy.ts). A durable NATS
 * consumer (one event at a time, so a lane is opened by its first event) only records that a
 * (hook, stream) lane has work; the worker leases due lanes from the lane store and sends each
 * lane's events in version order, moving the cursor after each success or dead letter. Lanes and
 * cursors are in MongoDB, so a SIGKILLed process's lanes are taken up by any instance once their
 * lease runs out, starting again at the first unsettled event (same Idempotency-Key).
 */
export class HookDeliveries {
  readonly #deps: HookDeliveriesDeps;
  readonly #options: Required<HookDeliveriesOptions>;
  readonly #owner = randomUUID();
  readonly #active = new Set<Promise<void>>();
  /** The agent of each conversation seen (for hooks that name one); a conversation's agent never changes. */
  readonly #agents = new Map<string, string | undefined>();
  #consumer: Consumer | undefined;
  #timer: NodeJS.Timeout | undefined;
  #ticking = false;
  #again = false;

  constructor(deps: HookDeliveriesDeps, options: HookDeliveriesOptions) {
    this.#deps = deps;
    this.#options = { leaseMs: 30_000, pollMs: 1_000, maxLanes: 16, ...options };
  }

  async start(): Promise<void> {
    if (this.#consumer) return;
    this.#consumer = await this.#deps.bus.consume(
      {
        name: HOOK_CONSUMER,
        // One at a time: a lane is opened by its first event. Opening is quick (a replay sends
        // once, kept alive), so a killed process's event comes back after 5 s.
        maxInFlight: 1,
        ackWaitMs: 5_000,
        idempotency: 'none',
        // A new durable does not walk the bus's history: hooks get events from their creation on.
        deliverFrom: 'new',
      },
      (delivery) => this.#onEvent(delivery),
    );
    this.#timer = setInterval(() => this.wake(), this.#options.pollMs);
    this.wake();
  }

  /** Stops taking events and lanes; waits for the sends in progress (each bounded by its timeout). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    const consumer = this.#consumer;
    this.#consumer = undefined;
    await consumer?.stop();
    await Promise.all([...this.#active]);
  }

  /** Looks for lanes due now (also called by the poll timer). */
  wake(): void {
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = true;
    void this.#tick()
      .catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'hook lanes not claimed'))
      .finally(() => {
        this.#ticking = false;
        if (this.#again && this.#timer) {
          this.#again = false;
          this.wake();
        }
      });
  }

  async #onEvent({ event, replayOf }: Delivery): Promise<void> {
    if (replayOf !== undefined) return this.#replay(event, replayOf);
    if (hookEventName(event) === undefined) return;
    const { hooks } = await this.#deps.tenantHooks(event.tenantId);
    const matching = hooksFor(event, hooks);
    for (const hook of matching) {
      await this.#deps.lanes.touch(
        { tenantId: event.tenantId, hook: hook.name, streamName: event.streamName },
        event.version,
      );
    }
    if (matching.length > 0) this.wake();
  }

  async #tick(): Promise<void> {
    const room = this.#options.maxLanes - this.#active.size;
    if (room <= 0 || !this.#timer) return;
    const now = this.#now();
    const lanes = await this.#deps.lanes.claim(this.#owner, now, this.#options.leaseMs, room);
    for (const lane of lanes) {
      const work: Promise<void> = this.#workAndRelease(lane).finally(() => this.#active.delete(work));
      this.#active.add(work);
    }
  }

  /**
   * Works the lane, gives it back, and looks for work again at once when it went well (events may
   * have come meanwhile); after an unexpected error (the store down) it waits for the next poll.
   */
  async #workAndRelease(lane: HookLane): Promise<void> {
    let worked = false;
    try {
      await this.#work(lane);
      worked = true;
    } catch (error) {
      this.#deps.logger.warn({ err: error, hook: lane.hook, tenantId: lane.tenantId }, 'hook lane failed');
    } finally {
      await this.#deps.lanes.release(lane.id, this.#owner).catch(() => undefined);
    }
    if (worked && this.#timer) this.wake();
  }

  /** Sends the lane's events after its cursor in order, until done or a failed attempt. */
  async #work(lane: HookLane): Promise<void> {
    const { lanes, store } = this.#deps;
    const renewal = setInterval(
      () =>
        void lanes.renew(lane.id, this.#owner, this.#now() + this.#options.leaseMs).catch(() => undefined),
      Math.max(100, Math.floor(this.#options.leaseMs / 3)),
    );
    try {
      const tenant = await this.#deps.tenantHooks(lane.tenantId);
      const hook = Object.hasOwn(tenant.hooks, lane.hook) ? tenant.hooks[lane.hook] : undefined;
      // A deleted hook: nothing more is sent to it.
      if (!hook) return void (await lanes.advance(lane.id, this.#owner, lane.target));
      const events = await store.read(lane.tenantId, lane.streamName, {
        fromVersion: lane.cursor + 1,
        toVersion: lane.target,
      });
      const agentId = hook.agentId === undefined ? undefined : await this.#agentOf(lane);
      let cursor = lane.cursor;
      let priorAttempts = lane.attempts;
      for (const event of events) {
        if (hookWants(hook, event, agentId)) {
          const settled = await this.#deliver(lane, hook, event, tenant.webhookSecret, priorAttempts);
          if (!settled) return;
          priorAttempts = 0;
        }
        cursor = event.version;
      }
      await lanes.advance(lane.id, this.#owner, Math.max(cursor, lane.target));
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * One attempt at one event: true when settled (sent, or dead-lettered after the last attempt)
   * and the lane is still this process's; false to stop working the lane.
   */
  async #deliver(
    lane: HookLane,
    hook: HookDefinition,
    event: RecordedEvent,
    sealed: SealedSecret | undefined,
    priorAttempts: number,
  ): Promise<boolean> {
    const log = this.#deps.logger.child({ hook: hook.name, tenantId: lane.tenantId, eventId: event.eventId });
    const answer = await this.#send(hook, event, sealed);
    if (answer.ok) {
      // False: the lease ran out and another process took the lane; it goes on from there.
      return this.#deps.lanes.advance(lane.id, this.#owner, event.version);
    }
    const attempts = priorAttempts + 1;
    const next = afterFailure(this.#options.schedule, attempts, this.#now());
    if (next.kind === 'retry') {
      log.info({ attempts, error: answer.error }, 'hook delivery failed; will retry');
      await this.#deps.lanes.failed(lane.id, this.#owner, event.version - 1, attempts, next.retryAt);
      return false;
    }
    await this.#deadLetter(derivedUuid(lane.tenantId, hook.name, event.eventId, 'dead'), hook, event, {
      error: answer.error,
      attempts,
    });
    log.warn({ attempts, error: answer.error }, 'hook delivery dead-lettered');
    return this.#deps.lanes.advance(lane.id, this.#owner, event.version);
  }

  /** Sends the event to the hook once; a 2xx's `{ data }` is appended to the conversation. */
  async #send(
    hook: HookDefinition,
    event: RecordedEvent,
    sealed: SealedSecret | undefined,
  ): Promise<HookAnswer> {
    const secret = this.#secret(event.tenantId, sealed);
    if (secret === false)
      return { ok: false, error: 'the tools service could not open the webhook secret to sign' };
    const answer = await this.#deps.send({
      url: hook.url,
      eventId: event.eventId,
      event: hookEventName(event) ?? event.type,
      body: hookBody(hook.name, event),
      ...(secret === undefined ? {} : { secret }),
    });
    const data = answer.ok ? answerData(answer.body) : undefined;
    if (!data) return answer;
    try {
      await this.#appendData(hook.name, event, data);
      return answer;
    } catch (error) {
      // Counted as a failed attempt (retried, then dead-lettered), never a lane stuck on it.
      const reason = error instanceof Error ? error.message : 'unknown';
      return { ok: false, error: `the hook's data could not be added to the conversation: ${reason}` };
    }
  }

  /**
   * An operator's replay of a hook dead letter: sent once more to its hook, outside the lane's
   * order. A failure is a new dead letter (the replayed one is marked replayed by the bus).
   */
  async #replay(event: RecordedEvent, replayOf: string): Promise<void> {
    // Its conversation was deleted since (the dead letter is sealed with its key): nothing to send.
    if (event.type === ERASED_EVENT_TYPE) return;
    const name = hookOfDeadLetter(event);
    const tenant = await this.#deps.tenantHooks(event.tenantId);
    const hook = name !== undefined && Object.hasOwn(tenant.hooks, name) ? tenant.hooks[name] : undefined;
    // A hook deleted since: nothing to send to.
    if (!hook) return;
    const answer = await this.#send(hook, event, tenant.webhookSecret);
    const log = this.#deps.logger.child({
      hook: hook.name,
      tenantId: event.tenantId,
      eventId: event.eventId,
    });
    if (answer.ok) return void log.info({ replayOf }, 'hook dead letter replayed');
    await this.#deadLetter(uuidv7(), hook, event, { error: answer.error, attempts: 1 });
    log.warn({ replayOf, error: answer.error }, 'hook dead letter replayed and failed again');
  }

  async #deadLetter(
    id: string,
    hook: HookDefinition,
    event: RecordedEvent,
    failure: { error: string; attempts: number },
  ): Promise<void> {
    await this.#deps.bus.deadLetters.record({
      id,
      consumer: HOOK_CONSUMER,
      tenantId: event.tenantId,
      event: deadLetterEvent(hook.name, event),
      error: failure.error,
      deliveryCount: failure.attempts,
      deadAt: new Date(this.#now()).toISOString(),
    });
  }

  /** `HookDataReceived` on the event's conversation, once per (hook, event): the commit id is derived from both. */
  async #appendData(hook: string, event: RecordedEvent, data: Record<string, unknown>): Promise<void> {
    if (parseStreamName(event.streamName).category !== CONVERSATION_CATEGORY) return;
    await this.#deps.store.append(
      event.tenantId,
      event.streamName,
      [
        {
          type: 'HookDataReceived',
          data: { hook, eventId: event.eventId, data, at: new Date(this.#now()).toISOString() },
          metadata: {
            ...(event.metadata.correlationId ? { correlationId: event.metadata.correlationId } : {}),
            causationId: event.eventId,
          },
        },
      ],
      { commitId: derivedUuid(event.tenantId, hook, event.eventId, 'data') },
    );
  }

  /** The opened webhook secret; undefined when the tenant has none (unsigned), false when it does not open. */
  #secret(tenantId: string, sealed: SealedSecret | undefined): string | undefined | false {
    if (!sealed) return undefined;
    try {
      if (!this.#deps.secrets) throw new Error('KEEL_MASTER_KEY is not set');
      return this.#deps.secrets.open(sealed, `${tenantId}/webhook`);
    } catch (error) {
      this.#deps.logger.error(
        { tenantId, reason: error instanceof Error ? error.message : 'unknown' },
        'the tenant webhook secret does not open',
      );
      return false;
    }
  }

  /** The agent of the lane's conversation (its first event); undefined for a run. */
  async #agentOf(lane: HookLane): Promise<string | undefined> {
    const key = `${lane.tenantId}\u0000${lane.streamName}`;
    if (this.#agents.has(key)) return this.#agents.get(key);
    const [first] = await this.#deps.store.read(lane.tenantId, lane.streamName, {
      fromVersion: 1,
      toVersion: 1,
    });
    const data = first?.data as { agentId?: unknown } | undefined;
    const agentId = typeof data?.agentId === 'string' ? data.agentId : undefined;
    if (this.#agents.size >= 10_000) this.#agents.clear();
    this.#agents.set(key, agentId);
    return agentId;
  }

  #now(): number {
    return this.#deps.now?.() ?? Date.now();
  }
}
