import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { testInfra, uniqueName } from '@keel/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { coalesceWrites } from './coalesced-writes.js';

/** Counts the connection's writes to its socket (nats-core's transport `send`, one per flush). */
const countWrites = (nc: NatsConnection): { count: number } => {
  const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol
    .transport;
  const counter = { count: 0 };
  const send = transport.send.bind(transport);
  transport.send = (frame) => {
    counter.count++;
    send(frame);
  };
  return counter;
};

/** `n` messages, each published by its own task of one turn of the event loop (as I/O callbacks are). */
const publishFromTasks = (nc: NatsConnection, subject: string, n: number): Promise<void> =>
  new Promise((resolve) => {
    for (let i = 0; i < n; i++) {
      setImmediate(() => {
        nc.publish(subject, JSON.stringify({ i }));
        if (i === n - 1) resolve();
      });
    }
  });

describe('coalesceWrites on a NATS connection', () => {
  const connections: NatsConnection[] = [];
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((nc) => nc.close()));
  });
  const open = async () => {
    const nc = await connect({ servers: testInfra().natsUrl });
    connections.push(nc);
    return nc;
  };

  it('sends the messages of one loop turn in one write, every one delivered in order', async () => {
    const [publisher, subscriber] = [await open(), await open()];
    const subject = `t.${uniqueName('coalesce')}`;
    const received: number[] = [];
    subscriber.subscribe(subject, {
      callback: (_error, msg) => {
        received.push(msg.json<{ i: number }>().i);
      },
    });
    await subscriber.flush();
    expect(coalesceWrites(publisher)).toBe(true);
    const writes = countWrites(publisher);

    await publishFromTasks(publisher, subject, 200);
    await publisher.flush();
    await expect.poll(() => received.length).toBe(200);

    expect(received).toEqual(Array.from({ length: 200 }, (_, i) => i));
    // 200 messages and the flush's PING: nats-core alone writes once per task (200 and more).
    expect(writes.count).toBeLessThanOrEqual(3);
  });

  it('a connection as nats-core leaves it writes once per task (what the test above rules out)', async () => {
    const publisher = await open();
    const writes = countWrites(publisher);
    await publishFromTasks(publisher, `t.${uniqueName('plain')}`, 50);
    await publisher.flush();
    expect(writes.count).toBeGreaterThanOrEqual(50);
  });

  it('still flushes at once past the buffer threshold, and request/reply works', async () => {
    const publisher = await open();
    coalesceWrites(publisher);
    const subject = `t.${uniqueName('big')}`;
    const replies = publisher.subscribe(`${subject}.echo`, {
      callback: (_error, msg) => {
        msg.respond(msg.data);
      },
    });
    const writes = countWrites(publisher);
    // 64 KB in one task: past nats-core's 32 KB threshold, written before the task ends.
    for (let i = 0; i < 64; i++) publisher.publish(subject, new Uint8Array(1024));
    expect(writes.count).toBeGreaterThanOrEqual(1);
    const reply = await publisher.request(`${subject}.echo`, 'ping', { timeout: 2_000 });
    expect(reply.string()).toBe('ping');
    replies.unsubscribe();
  });
});
