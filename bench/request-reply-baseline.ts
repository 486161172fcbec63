/**
 * The raw baseline of the tool round-trip benchmark: a core NATS request to a responder in the
 * same process that does one write and replies, with the plain NATS client. Like
 * `outbox-baseline.ts`, it imports `@nats-io/*` outside packages/core because a baseline must not
 * go through Keel's bus; it also deletes the benchmark's JetStream streams afterwards.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';

/** A responder on one subject and a requester, on two plain connections (as two services would have). */
export interface RawRequestReply {
  /** Sends `body`, waits for the reply and returns it. */
  request(body: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Subscribes a responder on `subject` that runs `respond` on each request's body (the raw write)
 * and replies with what it returns; requests go out on a second connection.
 */
export async function rawRequestReply(
  url: string,
  subject: string,
  respond: (body: string) => Promise<string>,
): Promise<RawRequestReply> {
  const server: NatsConnection = await connect({ servers: url, name: 'keel-bench-responder' });
  const client: NatsConnection = await connect({ servers: url, name: 'keel-bench-requester' });
  const subscription = server.subscribe(subject, {
    callback: (error, msg) => {
      if (error) return;
      respond(msg.string()).then(
        (reply) => msg.respond(reply),
        (failure: unknown) => console.error('raw responder failed', failure),
      );
    },
  });
  await server.flush();
  return {
    async request(body) {
      const reply = await client.request(subject, body, { timeout: 10_000 });
      return reply.string();
    },
    async close() {
      subscription.unsubscribe();
      await client.close();
      await server.close();
    },
  };
}

/** Deletes the given JetStream streams (the ones Keel's buses created for a benchmark). */
export async function deleteStreams(url: string, names: string[]): Promise<void> {
  const nc: NatsConnection = await connect({ servers: url, name: 'keel-bench-cleanup' });
  try {
    const jsm = await jetstreamManager(nc);
    for (const name of names) await jsm.streams.delete(name).catch(() => false);
  } finally {
    await nc.close();
  }
}
