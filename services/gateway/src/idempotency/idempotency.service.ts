import { PreconditionError } from '@keel/core';
import type { IdempotencyStore } from '@keel/core';
import { IDEMPOTENCY_PENDING_MS, IDEMPOTENCY_TTL_MS } from '@keel/core';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import {
  fingerprintOf,
  idempotencyKeyOf,
  IDEMPOTENCY_KEY_HEADER,
  keyScopeOf,
  scopedKey,
} from './idempotency-key.js';

/** The parts of a request idempotency looks at. */
export interface IdempotentRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

/** What to do with a POST: run it (and record its response, or not), or repeat a recorded response. */
export type IdempotencyDecision<T> =
  /** No Idempotency-Key: run the request as usual. */
  | { kind: 'none' }
  /**
   * The first request with this key: run it, then `complete` with its response, or `release` on
   * failure. Neither rejects: the work is done (or failed) whatever the store says, so a failed
   * write is logged (the claim then lapses after its pending time).
   */
  | { kind: 'first'; key: string; complete(response: T): Promise<void>; release(): Promise<void> }
  /** A retry of a finished request: answer `response` without doing the work again. */
  | { kind: 'replay'; response: T };

/**
 * `Idempotency-Key` on POST (API.md Conventions): the first request with a key does the work and
 * its response is kept 24 h, per tenant, method and path; a retry with the same key and body gets
 * that response. A retry while the first still runs, or the same key with another body: 409
 * `conflict` naming Idempotency-Key. A request that fails (an error answer) does nothing by the
 * contract, so its key is freed and a retry runs anew.
 */
@Injectable()
export class IdempotencyService {
  private readonly store: IdempotencyStore;

  constructor(
    @Inject(KEEL_INFRA) infra: Infrastructure,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {
    this.store = infra.idempotency;
  }

  /** Claims the request's key, or finds the response to repeat; throws the 409 / 400 cases. */
  begin<T>(principal: Principal, request: IdempotentRequest): Promise<IdempotencyDecision<T>> {
    const key = idempotencyKeyOf(request.headers[IDEMPOTENCY_KEY_HEADER]);
    const path = request.url.split('?')[0] ?? request.url;
    return this.decide<T>(keyScopeOf(principal), `${request.method} ${path}`, key, request.body);
  }

  /**
   * Claims `key` (undefined: none given) for one `operation` in `scope` with this request body, or
   * finds the response to repeat; throws the 409 cases. For edges other than the HTTP routes.
   */
  async decide<T>(
    scope: string,
    operation: string,
    key: string | undefined,
    body: unknown,
  ): Promise<IdempotencyDecision<T>> {
    if (key === undefined) return { kind: 'none' };
    const scoped = scopedKey(scope, operation, key);
    const fingerprint = fingerprintOf(body);
    const claim = await this.store.claim(scoped, fingerprint, IDEMPOTENCY_PENDING_MS);
    if (claim.outcome === 'claimed') {
      return {
        kind: 'first',
        key,
        complete: (response) =>
          this.logged('recording', this.store.complete(scoped, claim.claimId, response, IDEMPOTENCY_TTL_MS)),
        release: () => this.logged('releasing', this.store.release(scoped, claim.claimId)),
      };
    }
    if (claim.fingerprint !== fingerprint) {
      throw conflict('Idempotency-Key was already used with a different request body');
    }
    if (claim.outcome === 'pending') {
      throw conflict('Idempotency-Key: the first request with this key is still in progress; retry later');
    }
    return { kind: 'replay', response: claim.response as T };
  }

  private async logged(what: string, write: Promise<void>): Promise<void> {
    try {
      await write;
    } catch (error) {
      this.logger.warn({ err: error }, `${what} an Idempotency-Key failed`);
    }
  }
}

const conflict = (message: string): PreconditionError =>
  new PreconditionError(message, { details: { conflict: true, field: 'Idempotency-Key' } });
