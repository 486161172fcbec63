import { uuidv7 } from '../typing/index.js';
import type { IdempotencyClaim, IdempotencyStore } from './idempotency-store.js';

interface Entry {
  claimId: string;
  fingerprint: string;
  response?: { value: unknown };
  expiresAt: number;
}

/** The in-process IdempotencyStore (dev mode, unit tests): one process only. */
export class InMemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  async claim(key: string, fingerprint: string, pendingMs: number): Promise<IdempotencyClaim> {
    const found = this.#entries.get(key);
    if (found && found.expiresAt > this.now()) {
      return found.response
        ? { outcome: 'done', fingerprint: found.fingerprint, response: structuredClone(found.response.value) }
        : { outcome: 'pending', fingerprint: found.fingerprint };
    }
    const claimId = uuidv7();
    this.#entries.set(key, { claimId, fingerprint, expiresAt: this.now() + pendingMs });
    return { outcome: 'claimed', claimId };
  }

  async complete(key: string, claimId: string, response: unknown, ttlMs: number): Promise<void> {
    const found = this.#entries.get(key);
    if (found?.claimId !== claimId) return;
    found.response = { value: structuredClone(response) };
    found.expiresAt = this.now() + ttlMs;
  }

  async release(key: string, claimId: string): Promise<void> {
    if (this.#entries.get(key)?.claimId === claimId) this.#entries.delete(key);
  }

  async purgeExpired(before: Date): Promise<number> {
    let purged = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt < before.getTime()) {
        this.#entries.delete(key);
        purged++;
      }
    }
    return purged;
  }
}
