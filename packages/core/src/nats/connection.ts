import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { UnavailableError } from '../errors/index.js';

/**
 * A connection to NATS as Keel's buses and limiters use it: no stack captured per request
 * (nats-core otherwise makes an Error for each JetStream publish, KV operation and ack wait, for
 * its async trace; errors still say what failed, only their stack is shorter). Unreachable
 * servers: UnavailableError.
 */
export const connectNats = async (servers: string | string[], name?: string): Promise<NatsConnection> => {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers, noAsyncTraces: true, ...(name ? { name } : {}) });
  } catch (error) {
    throw new UnavailableError(`cannot connect to NATS at ${String(servers)}`, { cause: error });
  }
  return nc;
};
