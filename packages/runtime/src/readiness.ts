import type { EventBus, EventStore } from '@keel/core';

/** The outcome of one readiness probe of the store and the bus. */
export interface ReadinessReport {
  ready: boolean;
  store: ProbeResult;
  bus: ProbeResult;
}

/** One dependency's probe outcome. */
export interface ProbeResult {
  ok: boolean;
  latencyMs: number;
  error?: string;
}

/** A bus that can tell whether its server answers; adapters may offer it. */
interface PingableBus {
  ping(): Promise<unknown>;
}

/** What a NATS connection offers for a round trip (PING/PONG). */
interface RoundTrip {
  rtt(): Promise<number>;
  isClosed(): boolean;
}

const PROBE_STREAM = { tenantId: 'keel', streamName: 'readiness-probe' };

const withTimeout = async (work: () => Promise<unknown>, timeoutMs: number): Promise<ProbeResult> => {
  const started = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      work(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    return {
      ok: false,
      latencyMs: Math.round(performance.now() - started),
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
};

/**
 * The bus's round trip: the adapter's `ping()` when it has one; else the NATS connection's
 * `rtt()` (the NatsEventBus keeps its connection in `nc`); the in-process bus has no server.
 */
const pingBus = async (bus: EventBus, kind: 'memory' | 'nats'): Promise<void> => {
  const pingable = bus as Partial<PingableBus>;
  if (typeof pingable.ping === 'function') {
    await pingable.ping();
    return;
  }
  if (kind === 'memory') return;
  const connection = (bus as unknown as { nc?: Partial<RoundTrip> }).nc;
  if (typeof connection?.rtt !== 'function' || typeof connection.isClosed !== 'function') {
    throw new Error('the NATS bus offers no way to probe its connection');
  }
  if (connection.isClosed()) throw new Error('the NATS connection is closed');
  await connection.rtt();
};

/** Probes the store (a stream-version read) and the bus (a server round trip), each within `timeoutMs`. */
export async function probeReadiness(
  store: EventStore,
  bus: EventBus,
  busKind: 'memory' | 'nats',
  timeoutMs = 2_000,
): Promise<ReadinessReport> {
  const [storeResult, busResult] = await Promise.all([
    withTimeout(() => store.streamVersion(PROBE_STREAM.tenantId, PROBE_STREAM.streamName), timeoutMs),
    withTimeout(() => pingBus(bus, busKind), timeoutMs),
  ]);
  return { ready: storeResult.ok && busResult.ok, store: storeResult, bus: busResult };
}
