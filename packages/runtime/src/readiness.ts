import type { EventBus, EventStore } from '@keel/core';
import { messageOf } from '@keel/core';

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
      error: messageOf(error),
    };
  } finally {
    clearTimeout(timer);
  }
};

/** Probes the store (a stream-version read) and the bus (a server round trip), each within `timeoutMs`. */
export async function probeReadiness(
  store: EventStore,
  bus: EventBus,
  timeoutMs = 2_000,
): Promise<ReadinessReport> {
  const [storeResult, busResult] = await Promise.all([
    withTimeout(() => store.streamVersion(PROBE_STREAM.tenantId, PROBE_STREAM.streamName), timeoutMs),
    withTimeout(() => bus.ping(), timeoutMs),
  ]);
  return { ready: storeResult.ok && busResult.ok, store: storeResult, bus: busResult };
}
