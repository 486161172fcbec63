import type { NatsConnection } from '@nats-io/nats-core';

/**
 * The parts of nats-core 3.x's protocol handler that `coalesceWrites` replaces or uses: the
 * outbound buffer, its flush, and the threshold past which a command flushes at once.
 */
interface ProtocolInternals {
  outbound: { length(): number; size(): number; fill(buf: Uint8Array, ...payloads: Uint8Array[]): void };
  pendingLimit: number;
  flushPending(): void;
  sendCommand(cmd: string | Uint8Array, ...payloads: Uint8Array[]): void;
}

const encoder = new TextEncoder();

const protocolOf = (nc: NatsConnection): ProtocolInternals | undefined => {
  const protocol = (nc as unknown as { protocol?: Partial<ProtocolInternals> }).protocol;
  const outbound = protocol?.outbound;
  return protocol &&
    typeof protocol.sendCommand === 'function' &&
    typeof protocol.flushPending === 'function' &&
    typeof protocol.pendingLimit === 'number' &&
    typeof outbound?.length === 'function' &&
    typeof outbound.size === 'function' &&
    typeof outbound.fill === 'function'
    ? (protocol as ProtocolInternals)
    : undefined;
};

/**
 * Makes the connection write what it has to send once per turn of the event loop (setImmediate,
 * after the I/O callbacks of the current poll) instead of once per task (nats-core queues a
 * microtask per command sent into an empty buffer). The same bytes in the same order, in fewer
 * socket writes: under load a process publishes from many I/O callbacks of one poll (token deltas
 * of hundreds of turns, acks, JetStream publishes), and on loopback each write costs the sender
 * the whole TCP path and a wake-up of the server. A buffer past nats-core's threshold still
 * flushes at once, and `flush()`, a (re)connect and a drain flush synchronously as before.
 *
 * Relies on nats-core 3.x's protocol handler (`protocol.sendCommand`, `outbound`): when its shape
 * is not that, the connection is left as it is and false returned.
 */
export const coalesceWrites = (nc: NatsConnection): boolean => {
  const protocol = protocolOf(nc);
  if (!protocol) return false;
  const flush = (): void => protocol.flushPending();
  protocol.sendCommand = (cmd, ...payloads) => {
    const empty = protocol.outbound.length() === 0;
    protocol.outbound.fill(typeof cmd === 'string' ? encoder.encode(cmd) : cmd, ...payloads);
    if (empty) setImmediate(flush);
    else if (protocol.outbound.size() >= protocol.pendingLimit) protocol.flushPending();
  };
  return true;
};
