import { JetStreamApiCodes, JetStreamApiError, StorageType } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { UnavailableError } from '../errors/index.js';
import { sleep } from '../time/index.js';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '../rate-limit/rate-limiter.js';
import { decisionOf, unlimited, windowOf } from '../rate-limit/rate-limiter.js';
import { encodeSubjectToken } from './subjects.js';

/** The KV bucket holding the counters unless told otherwise. */
export const DEFAULT_RATE_LIMIT_BUCKET = 'keel_rate_limits';

/** How to reach NATS and which bucket holds the counters. */
export interface NatsRateLimiterOptions {
  servers: string | string[];
  policy: RateLimitPolicy;
  /** JetStream KV bucket; created (in memory storage, keys expiring after two windows) if missing. */
  bucket?: string;
  /** Shown in the server's connection list. */
  connectionName?: string;
  /** The clock; tests set it. */
  now?: () => number;
}

/** Compare-and-set rounds lost to other instances before a hit gives up as unavailable. */
const MAX_ATTEMPTS = 50;

interface Waiter {
  remainingMs: number;
  resolve(decision: RateLimitDecision): void;
  reject(error: unknown): void;
}

const isLostRace = (error: unknown): boolean =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
    error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);

/**
 * Rate-limit counters every gateway instance shares: one JetStream KV entry per key and fixed
 * window (`<key>.<window start ms>`) holding the count, changed only by compare-and-set (`create`
 * when absent, `update` at the revision read), so two instances never both take the last slot.
 * Hits of one key arriving together in this process are folded into one compare-and-set of +n,
 * so contention is between processes only. A key found full is refused locally until its window
 * ends (a count never decreases within a window). Old windows expire with the bucket's max age.
 */
export class NatsRateLimiter implements RateLimiter {
  readonly #queues = new Map<string, Waiter[]>();
  readonly #full = new Map<string, number>();
  #closed: Promise<void> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    readonly policy: RateLimitPolicy,
    private readonly now: () => number,
  ) {}

  /** Connects, creates or binds the bucket. */
  static async connect(options: NatsRateLimiterOptions): Promise<NatsRateLimiter> {
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: options.servers,
        ...(options.connectionName ? { name: options.connectionName } : {}),
      });
    } catch (error) {
      throw new UnavailableError(`cannot connect to NATS at ${String(options.servers)}`, { cause: error });
    }
    try {
      const kv = await new Kvm(nc).create(options.bucket ?? DEFAULT_RATE_LIMIT_BUCKET, {
        history: 1,
        storage: StorageType.Memory,
        ttl: Math.max(2 * options.policy.windowMs, 1_000),
      });
      return new NatsRateLimiter(nc, kv, options.policy, options.now ?? Date.now);
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  hit(key: string): Promise<RateLimitDecision> {
    if (this.policy.limit <= 0) return Promise.resolve(unlimited(this.policy));
    if (this.#closed) return Promise.reject(new UnavailableError('the rate limiter is closed'));
    const { start, remainingMs } = windowOf(this.now(), this.policy.windowMs);
    const entry = `${encodeSubjectToken(key)}.${start}`;
    if (this.#full.get(entry) === start) {
      return Promise.resolve(decisionOf(this.policy, false, this.policy.limit, remainingMs));
    }
    return new Promise<RateLimitDecision>((resolve, reject) => {
      const queue = this.#queues.get(entry);
      if (queue) {
        queue.push({ remainingMs, resolve, reject });
        return;
      }
      this.#queues.set(entry, [{ remainingMs, resolve, reject }]);
      void this.#drain(entry, start);
    });
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      if (!this.nc.isClosed()) await this.nc.drain();
    })());
  }

  /** Answers the waiters of one counter a batch at a time until none are left. */
  async #drain(entry: string, start: number): Promise<void> {
    const queue = this.#queues.get(entry)!;
    while (queue.length > 0) {
      const batch = queue.splice(0);
      try {
        const { before, admitted } = await this.#admit(entry, batch.length);
        batch.forEach((waiter, i) => {
          const allowed = i < admitted;
          waiter.resolve(
            decisionOf(
              this.policy,
              allowed,
              allowed ? before + i + 1 : this.policy.limit,
              waiter.remainingMs,
            ),
          );
        });
        if (before + admitted >= this.policy.limit) this.#markFull(entry, start);
      } catch (error) {
        for (const waiter of batch) waiter.reject(error);
      }
    }
    this.#queues.delete(entry);
  }

  /** Adds up to `wanted` to the counter by compare-and-set; says how many fit and the count before. */
  async #admit(entry: string, wanted: number): Promise<{ before: number; admitted: number }> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.kv.get(entry);
      const before = current?.operation === 'PUT' ? Number(current.string()) || 0 : 0;
      const admitted = Math.min(wanted, Math.max(0, this.policy.limit - before));
      if (admitted === 0) return { before, admitted };
      const next = String(before + admitted);
      try {
        if (current) await this.kv.update(entry, next, current.revision);
        else await this.kv.create(entry, next);
        return { before, admitted };
      } catch (error) {
        if (!isLostRace(error)) throw error;
        if (attempt >= MAX_ATTEMPTS) {
          throw new UnavailableError('rate-limit counter too contended', { cause: error });
        }
        // Another instance wrote first: read again after a short random pause.
        await sleep(Math.random() * Math.min(attempt, 10));
      }
    }
  }

  #markFull(entry: string, start: number): void {
    if (this.#full.size > 10_000) {
      for (const [key, windowStart] of this.#full) if (windowStart < start) this.#full.delete(key);
    }
    this.#full.set(entry, start);
  }
}
