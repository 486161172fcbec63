// Runs the RateLimiter and VersionedCounters contract suites (their assertions are in
// rate-limiter.contract.ts and versioned-counters.contract.ts) on the JetStream KV adapter, then
// counts a hit's round trips to the real server.
import { testInfra, uniqueName } from '@keel/testkit';
import { StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { describeRateLimiterContract } from '../rate-limit/rate-limiter.contract.js';
import { SharedRateLimiter } from '../rate-limit/shared-rate-limiter.js';
import { describeVersionedCountersContract } from '../rate-limit/versioned-counters.contract.js';
import { KvCounters, NatsRateLimiter } from './nats-rate-limiter.js';

const destroyBucket = async (servers: string, bucket: string) => {
  const admin = await connect({ servers });
  await (await new Kvm(admin).open(bucket)).destroy();
  await admin.close();
};

// Two connections to the real server, as two gateway processes; each test gets its own bucket.
describeRateLimiterContract('NATS JetStream KV', async (policy, now) => {
  const bucket = uniqueName('rl');
  const servers = testInfra().natsUrl;
  const limiter = await NatsRateLimiter.connect({ servers, policy, bucket, now });
  const second = await NatsRateLimiter.connect({ servers, policy, bucket, now });
  return {
    limiter,
    second,
    cleanup: async () => {
      await limiter.close();
      await second.close();
      await destroyBucket(servers, bucket);
    },
  };
});

/** A bucket as NatsRateLimiter.connect makes it, on a connection of its own. */
const kvCounters = async (): Promise<{
  nc: NatsConnection;
  counters: KvCounters;
  cleanup(): Promise<void>;
}> => {
  const servers = testInfra().natsUrl;
  const bucket = uniqueName('rl');
  const nc = await connect({ servers });
  const kv = await new Kvm(nc).create(bucket, { history: 1, storage: StorageType.Memory, ttl: 120_000 });
  return {
    nc,
    counters: new KvCounters(kv),
    cleanup: async () => {
      await nc.close();
      await destroyBucket(servers, bucket);
    },
  };
};

describeVersionedCountersContract('NATS JetStream KV', kvCounters);

describe('NatsRateLimiter round trips on a real server', () => {
  it('a hit of a key this instance wrote last sends one message to NATS (the compare-and-set), no read', async () => {
    const { nc, counters, cleanup } = await kvCounters();
    try {
      // A limit under 20 is never leased: every hit is its own compare-and-set.
      const limiter = new SharedRateLimiter(counters, { limit: 19, windowMs: 60_000 });
      await limiter.hit('key-a'); // the window's create
      const sent = nc.stats().outMsgs;
      for (let i = 0; i < 10; i++) expect((await limiter.hit('key-a')).remaining).toBe(19 - i - 2);
      expect(nc.stats().outMsgs - sent).toBe(10);
    } finally {
      await cleanup();
    }
  });

  it('a busy key is leased: 300 hits of a limit of 600 send 14 messages to NATS, and count down one by one', async () => {
    const { nc, counters, cleanup } = await kvCounters();
    try {
      const limiter = new SharedRateLimiter(counters, { limit: 600, windowMs: 60_000 });
      const sent = nc.stats().outMsgs;
      for (let i = 0; i < 300; i++) expect((await limiter.hit('key-a')).remaining).toBe(600 - i - 1);
      // Each write takes its hit and a lease of 1, 2, 4, 8, 16, then 30: 2 + 3 + 5 + 9 + 17 hits,
      // then 31 per write: 300 hits in 5 + 9 writes.
      expect(nc.stats().outMsgs - sent).toBe(14);
    } finally {
      await cleanup();
    }
  });
});
