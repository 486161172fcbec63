// How an internal gRPC client spreads its calls over a service's instances, as pure decisions
// (the GrpcClient does the IO): which address string means which channels, which channel takes
// the next call, and whether a failed call may go again to another instance.
import { connectivityState, status } from '@grpc/grpc-js';

/**
 * The channels an address names:
 * - `dns:///agent:50052`: one channel that resolves every address of the name and balances
 *   round-robin over them (a Kubernetes headless Service; grpc-js re-resolves as pods come and go);
 * - `a:50052,b:50052` (compose, a fixed list): one channel per entry, balanced by the client;
 * - `host:port`: one channel (as before).
 * Entries are trimmed; empty ones are an error (a typo must not silently drop an instance).
 */
export const grpcTargetsOf = (address: string): string[] => {
  const targets = address.split(',').map((entry) => entry.trim());
  if (targets.length === 0 || targets.some((t) => t === '')) {
    throw new Error(`gRPC address "${address}" has an empty entry`);
  }
  return targets;
};

/** grpc-js's service config that balances one channel's resolved addresses round-robin. */
export const ROUND_ROBIN_SERVICE_CONFIG = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** Whether a target is resolved by DNS into several addresses (then balanced inside its channel). */
export const isDnsTarget = (target: string): boolean => target.startsWith('dns:');

/** Channel states in order of preference: a connected channel first, a failing one last. */
const PREFERENCE: ReadonlyMap<connectivityState, number> = new Map([
  [connectivityState.READY, 0],
  [connectivityState.IDLE, 1],
  [connectivityState.CONNECTING, 1],
  [connectivityState.TRANSIENT_FAILURE, 2],
  [connectivityState.SHUTDOWN, 3],
]);

/**
 * The channel for the next call: round-robin from `start` among the channels in the best state
 * present (READY before IDLE/CONNECTING before TRANSIENT_FAILURE), skipping those in `tried`
 * unless every channel was tried. An instance that died is out of the rotation as soon as its
 * connection drops, and one that comes back rejoins once connected.
 */
export const pickChannel = (
  states: readonly connectivityState[],
  start: number,
  tried: ReadonlySet<number> = new Set(),
): number => {
  const n = states.length;
  const candidates = Array.from({ length: n }, (_, k) => (start + k) % n);
  const untried = candidates.filter((i) => !tried.has(i));
  const pool = untried.length > 0 ? untried : candidates;
  const rank = (i: number) => PREFERENCE.get(states[i]!) ?? 3;
  const best = Math.min(...pool.map(rank));
  return pool.find((i) => rank(i) === best)!;
};

/** What the retry decision looks at. */
export interface FailedAttempt {
  code: number;
  /** Attempts made so far (1 after the first). */
  attempts: number;
  /** Most attempts for this call (the client's instances, at least 2). */
  maxAttempts: number;
  /** Whether the call may run twice without harm: a read, or a write with an idempotency key. */
  retrySafe: boolean;
  /** Time left before the call's deadline, ms. */
  remainingMs: number;
}

/**
 * Whether a failed call goes again, to another instance: only UNAVAILABLE (the instance is gone
 * or unreachable; any other code is the service's answer), only a call that is safe to run twice
 * (UNAVAILABLE can come after the instance did the work and died before answering), within the
 * attempts and the call's deadline.
 */
export const retryOnAnother = (attempt: FailedAttempt): boolean =>
  attempt.code === status.UNAVAILABLE &&
  attempt.retrySafe &&
  attempt.attempts < attempt.maxAttempts &&
  attempt.remainingMs > 0;
