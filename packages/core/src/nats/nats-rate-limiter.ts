import { JetStreamApiCodes, JetStreamApiError, StorageType } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from './connection.js';
import type { RateLimitDecision, RateLimiter, RateLimitPolicy } from '../rate-limit/rate-limiter.js';
import { SharedRateLimiter } from '../rate-limit/shared-rate-limiter.js';
import type { CounterVersion, VersionedCounters } from '../rate-limit/versioned-counters.js';
import { ABSENT } from '../rate-limit/versioned-counters.js';
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

const isLostRace = (error: unknown): boolean =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.StreamWrongLastSequence ||
    error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);

/**
 * The counters as JetStream KV entries, one per key and fixed window (`<key>.<window start ms>`,
 * the count as text). A write is one publish naming the expected last revision of its subject
 * (0: none, a create), so the server refuses it when another instance wrote first. Old windows
 * expire with the bucket's max age (two windows: never within their own window).
 */
export class KvCounters implements VersionedCounters {
  constructor(private readonly kv: KV) {}

  async read(key: string, windowStart: number): Promise<CounterVersion> {
    const entry = await this.kv.get(entryOf(key, windowStart));
    if (!entry) return ABSENT;
    // A deleted or purged entry (an operator's doing) counts 0 but is written at its revision.
    const count = entry.operation === 'PUT' ? Number(entry.string()) || 0 : 0;
    return { revision: entry.revision, count };
  }

  async write(
    key: string,
    windowStart: number,
    count: number,
    expected: number,
  ): Promise<number | undefined> {
    try {
      // Not kv.create: on a refusal it reads the entry before failing, a round trip wasted here.
      return await this.kv.put(entryOf(key, windowStart), String(count), { previousSeq: expected });
    } catch (error) {
      if (isLostRace(error)) return undefined;
      throw error;
    }
  }
}

const entryOf = (key: string, windowStart: number): string => `${encodeSubjectToken(key)}.${windowStart}`;

/**
 * Rate-limit counters every gateway instance shares, in a JetStream KV bucket: a SharedRateLimiter
 * (compare-and-set admission, one round trip per hit while this instance wrote the counter last)
 * over its own NATS connection.
 */
export class NatsRateLimiter implements RateLimiter {
  #closed: Promise<void> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly limiter: SharedRateLimiter,
  ) {}

  get policy(): RateLimitPolicy {
    return this.limiter.policy;
  }

  /** Connects, creates or binds the bucket. */
  static async connect(options: NatsRateLimiterOptions): Promise<NatsRateLimiter> {
    const nc = await connectNats(options.servers, options.connectionName);
    try {
      const kv = await new Kvm(nc).create(options.bucket ?? DEFAULT_RATE_LIMIT_BUCKET, {
        history: 1,
        storage: StorageType.Memory,
        ttl: Math.max(2 * options.policy.windowMs, 1_000),
      });
      const counters = new KvCounters(kv);
      return new NatsRateLimiter(nc, new SharedRateLimiter(counters, options.policy, options.now));
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  hit(key: string): Promise<RateLimitDecision> {
    return this.limiter.hit(key);
  }

  close(): Promise<void> {
    return (this.#closed ??= (async () => {
      await this.limiter.close();
      if (!this.nc.isClosed()) await this.nc.drain();
    })());
  }
}
