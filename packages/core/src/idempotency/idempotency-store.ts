/** What a claim of an idempotency key found. */
export type IdempotencyClaim =
  /** The key was free (or its entry had expired): the caller does the work, then completes or releases. */
  | { outcome: 'claimed'; claimId: string }
  /** Another request holds the key and has not finished yet. */
  | { outcome: 'pending'; fingerprint: string }
  /** A request finished with this key: its recorded response. */
  | { outcome: 'done'; fingerprint: string; response: unknown };

/**
 * Remembers requests made with an `Idempotency-Key` (API.md Conventions), so a retry returns the
 * first response instead of doing the work twice. Keys are opaque here (the caller scopes them by
 * tenant and route); an expired entry counts as absent. Shared by every gateway instance: a
 * claim is won by exactly one of several concurrent requests.
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for a request whose body hashes to `fingerprint`, for `pendingMs` (a request that
   * crashed frees the key then); or tells who holds it and, when done, what it answered.
   */
  claim(key: string, fingerprint: string, pendingMs: number): Promise<IdempotencyClaim>;
  /** Records the response of the claim's request, kept `ttlMs` from now. No-op if the claim was lost. */
  complete(key: string, claimId: string, response: unknown, ttlMs: number): Promise<void>;
  /** Frees the key (the request failed and did nothing): a retry will do the work. */
  release(key: string, claimId: string): Promise<void>;
  /** Deletes the entries that expired before `before` (they already count as absent); how many. */
  purgeExpired(before: Date): Promise<number>;
}

/** How long a completed request's response is returned to retries: 24 h (API.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** How long a claim holds a key while its request runs, unless completed or released first. */
export const IDEMPOTENCY_PENDING_MS = 60 * 1000;
