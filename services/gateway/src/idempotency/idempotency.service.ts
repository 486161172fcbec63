import { ConflictError, KeelError, NotFoundError } from '@keel/core';
import type { IdempotencyStore } from '@keel/core';
import { IDEMPOTENCY_PENDING_MS, IDEMPOTENCY_TTL_MS } from '@keel/core';
import type { ConversationErasure, Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER } from '@keel/runtime';
import type { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import {
  IDEMPOTENCY_PURPOSE,
  conversationOfRecord,
  isSealedRecord,
  tenantOfScope,
} from './idempotency-sealing.js';
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

/** How often expired entries are swept, and how long past expiry an entry must be to go. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;

/** Which request an Idempotency-Key belongs to: scope (tenant), operation, the key (if any), the body. */
export interface IdempotencyTarget {
  scope: string;
  operation: string;
  key: string | undefined;
  body: unknown;
  /**
   * The work passes the key on to the service that does it, which answers a retry with the first
   * outcome from its own log (the agent's conversation commands): this store is then only the
   * fast path, so a failed or unknown outcome frees the key and a retry while the first request
   * is pending goes through, since neither can make the work run twice.
   */
  deduplicated?: boolean;
}

// gRPC status codes after which the call may or may not have done its work.
const UNKNOWN_OUTCOME_CODES = new Set([
  1 /* CANCELLED */, 2 /* UNKNOWN */, 4 /* DEADLINE_EXCEEDED */, 13 /* INTERNAL */, 14 /* UNAVAILABLE */,
]);
const UNKNOWN_OUTCOME_ERRNOS = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);

/**
 * Whether a failed request may have done its work anyway: the service it called became
 * unreachable or slow after the request was sent (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, a
 * reset connection) or failed unexpectedly after it. A refusal (bad input, not found, conflict,
 * permission, budget) did nothing, by the contract, and so does a fault of the gateway's own.
 */
export const isUnknownOutcome = (error: unknown): boolean => {
  if (error instanceof KeelError) return error.code === 'UNAVAILABLE';
  const { code } = (error ?? {}) as { code?: unknown };
  if (typeof code === 'number') return UNKNOWN_OUTCOME_CODES.has(code);
  return typeof code === 'string' && UNKNOWN_OUTCOME_ERRNOS.has(code);
};

/** What `once` did: ran the work (`result`), or found the first request's `recorded` outcome. */
export type OnceOutcome<R, S> = { replayed: false; result: R } | { replayed: true; recorded: S };

/**
 * `Idempotency-Key` on POST (API.md Conventions): the first request with a key does the work and
 * its response is kept 24 h, per tenant, method and path; a retry with the same key and body gets
 * that response. A retry while the first still runs, or the same key with another body: 409
 * `conflict` naming Idempotency-Key. A request that fails (an error answer) does nothing by the
 * contract, so its key is freed and a retry runs anew; but one whose outcome is unknown (the
 * service it called went away after the request was sent) keeps its claim, so a retry is 409
 * until the claim lapses, unless the work is deduplicated where it is done (the conversation
 * commands: the agent recognises the key in the conversation's log and answers the first
 * outcome), when the retry goes through to it.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit, OnModuleDestroy {
  private readonly store: IdempotencyStore;
  /** Absent in unit setups that give no infrastructure but the store: nothing is sealed then. */
  private readonly erasure: ConversationErasure | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    @Inject(KEEL_INFRA) infra: Infrastructure,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {
    this.store = infra.idempotency;
    this.erasure = infra.erasure;
  }

  /** Sweeps expired entries every hour (the store keeps them otherwise: FerretDB has no TTL index). */
  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /** Deletes the entries expired for over a sweep interval (long absent: no claim races them). */
  async sweep(now = Date.now()): Promise<void> {
    try {
      const purged = await this.store.purgeExpired(new Date(now - SWEEP_EVERY_MS));
      if (purged > 0) this.logger.debug({ purged }, 'expired Idempotency-Keys purged');
    } catch (error) {
      this.logger.warn({ err: error }, 'purging expired Idempotency-Keys failed');
    }
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
    deduplicated = false,
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
          this.logged('recording', this.record(scope, operation, scoped, claim.claimId, response)),
        release: () => this.logged('releasing', this.store.release(scoped, claim.claimId)),
      };
    }
    if (claim.fingerprint !== fingerprint) {
      throw conflict('Idempotency-Key was already used with a different request body');
    }
    // The first request may have died with its gateway: the service doing the work answers the retry.
    if (claim.outcome === 'pending' && deduplicated) return { kind: 'none' };
    if (claim.outcome === 'pending') {
      throw conflict('Idempotency-Key: the first request with this key is still in progress; retry later');
    }
    return { kind: 'replay', response: (await this.opened(scope, operation, claim.response)) as T };
  }

  /**
   * Keeps a response, sealed with the conversation it is about (conversationOfRecord), so that
   * deleting the conversation erases it too; the claim is freed instead when that conversation's
   * key is already destroyed (deleted meanwhile: nothing to keep).
   */
  private async record(
    scope: string,
    operation: string,
    scoped: string,
    claimId: string,
    response: unknown,
  ): Promise<void> {
    const tenantId = tenantOfScope(scope);
    const conversationId = conversationOfRecord(operation, response);
    if (!this.erasure?.sealing || tenantId === undefined || conversationId === undefined) {
      return this.store.complete(scoped, claimId, response, IDEMPOTENCY_TTL_MS);
    }
    const sealed = await this.erasure.sealFor(tenantId, conversationId, IDEMPOTENCY_PURPOSE, response);
    if (sealed === undefined) return this.store.release(scoped, claimId);
    const kept = { keelSealedFor: conversationId, sealed };
    return this.store.complete(scoped, claimId, kept, IDEMPOTENCY_TTL_MS);
  }

  /** A kept response opened; its conversation deleted since, the retry is answered 404 as every route then is. */
  private async opened(scope: string, operation: string, stored: unknown): Promise<unknown> {
    const tenantId = tenantOfScope(scope);
    if (!isSealedRecord(stored) || tenantId === undefined || this.erasure === undefined) return stored;
    const { keelSealedFor: conversationId, sealed } = stored;
    const response = await this.erasure.openFor(tenantId, conversationId, IDEMPOTENCY_PURPOSE, sealed);
    if (response === undefined) throw new NotFoundError(`conversation ${conversationId} not found`);
    return response;
  }

  /**
   * Runs `work` once per key: without a key, or for the first request with it, runs it and
   * records `record(result)`; a retry gets that record back instead (`replayed`). A failed
   * `work` frees the key, unless its outcome is unknown and the work is not `deduplicated`
   * downstream (then the claim stays until it lapses). Throws the 409 cases of `decide`.
   */
  async once<R, S = R>(
    target: IdempotencyTarget,
    work: () => Promise<R>,
    record: (result: R) => S = (result) => result as unknown as S,
  ): Promise<OnceOutcome<R, S>> {
    const decision = await this.decide<S>(
      target.scope,
      target.operation,
      target.key,
      target.body,
      target.deduplicated ?? false,
    );
    if (decision.kind === 'replay') return { replayed: true, recorded: decision.response };
    let result: R;
    try {
      result = await work();
    } catch (error) {
      if (decision.kind === 'first' && (target.deduplicated || !isUnknownOutcome(error))) {
        await decision.release();
      }
      throw error;
    }
    if (decision.kind === 'first') await decision.complete(record(result));
    return { replayed: false, result };
  }

  /** What `once` keys an HTTP request by: its principal's scope, method and path, header and body. */
  targetOf(principal: Principal, request: IdempotentRequest): IdempotencyTarget {
    const path = request.url.split('?')[0] ?? request.url;
    return {
      scope: keyScopeOf(principal),
      operation: `${request.method} ${path}`,
      key: idempotencyKeyOf(request.headers[IDEMPOTENCY_KEY_HEADER]),
      body: request.body,
    };
  }

  private async logged(what: string, write: Promise<void>): Promise<void> {
    try {
      await write;
    } catch (error) {
      this.logger.warn({ err: error }, `${what} an Idempotency-Key failed`);
    }
  }
}

const conflict = (message: string): ConflictError =>
  new ConflictError(message, { details: { field: 'Idempotency-Key' } });
