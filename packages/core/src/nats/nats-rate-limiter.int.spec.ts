// Runs the RateLimiter contract suite (its assertions are in rate-limiter.contract.ts) on this adapter.
import { testInfra, uniqueName } from '@keel/testkit';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { describeRateLimiterContract } from '../rate-limit/rate-limiter.contract.js';
import { NatsRateLimiter } from './nats-rate-limiter.js';

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
      const admin = await connect({ servers });
      await (await new Kvm(admin).open(bucket)).destroy();
      await admin.close();
    },
  };
});
