import { readFileSync } from 'node:fs';
import { KeelError } from '@keel/core';
import { EgressPolicy, createEgressFetch, egressDeniedIn } from '@keel/runtime';
import { backoffDelayMs, sleep } from './backoff.js';
import { readBody, readSnippet, snippetOf } from './response-body.js';
import type { CallCaller, ToolError } from './types.js';
import { signBody } from './webhook-signature.js';

export { signBody, verifySignature } from './webhook-signature.js';

/** One webhook call as API.md defines it; `secret` signs the body and is never logged or returned. */
export interface WebhookRequest {
  url: string;
  tenantId: string;
  conversationId: string;
  /** Also the `Idempotency-Key`: every attempt and every redelivery of the call carries it. */
  toolCallId: string;
  args: unknown;
  /** The turn's end user and the conversation's metadata: the body's `user` and `metadata`. */
  caller?: CallCaller;
  /** Deadline of each attempt (connect, headers and body), in milliseconds. */
  timeoutMs: number;
  /** The tenant's webhook secret. */
  secret: string;
  /** Aborts the call at once (cancel, shutdown): no retry, `call` rejects with ToolCallCancelledError. */
  signal?: AbortSignal;
}

/** The result of a webhook call, after retries. */
export type WebhookResult =
  | { ok: true; result: unknown; attempts: number; status: number }
  | { ok: false; error: ToolError; attempts: number; status?: number };

/** What happened in one attempt, for logs and metrics (holds no secret, no body). */
export interface WebhookAttemptInfo {
  attempt: number;
  status?: number;
  /** The error word when the attempt failed. */
  errorCode?: string;
  /** True when another attempt follows. */
  willRetry: boolean;
  /** The wait before the next attempt, when one follows. */
  delayMs?: number;
  durationMs: number;
}

/** Tuning of the webhook executor; the defaults suit production. */
export interface WebhookExecutorOptions {
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  /** Cap of the first backoff wait (default 250 ms); it doubles per attempt. */
  baseDelayMs?: number;
  /** Cap of any backoff wait (default 5 s). */
  maxDelayMs?: number;
  /** Largest response body accepted (default 1 MiB). */
  maxResponseBytes?: number;
  userAgent?: string;
  /** Source of jitter in [0, 1) (tests pin it). */
  random?: () => number;
  /**
   * What a webhook URL may reach (`KEEL_EGRESS_ALLOW`); default: public addresses only. Every
   * call is checked after resolution and connects to the address checked.
   */
  egress?: EgressPolicy;
  /** Replaces the egress-guarded fetch (tests that stub the network). */
  fetch?: typeof fetch;
  onAttempt?: (info: WebhookAttemptInfo) => void;
}

/** The call was cancelled through its signal; nothing is known about whether the webhook acted. */
export class ToolCallCancelledError extends KeelError {
  constructor(cause?: unknown) {
    super('ABORTED', 'the tool call was cancelled', { cause });
  }
}

/** Default largest response body: 1 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** `keel-tools/<version of @keel/tools>`, sent as `User-Agent`. */
export const DEFAULT_USER_AGENT = `keel-tools/${packageVersion()}`;

type Attempt =
  | { kind: 'final'; result: WebhookResult }
  | { kind: 'retryable'; error: ToolError; status?: number }
  | { kind: 'cancelled' };

/** Calls webhook tools per API.md: signed, with an Idempotency-Key, timeouts and retries on 5xx/network errors. */
export class WebhookExecutor {
  readonly #maxAttempts: number;
  readonly #backoff: { baseDelayMs: number; maxDelayMs: number };
  readonly #maxResponseBytes: number;
  readonly #userAgent: string;
  readonly #random: () => number;
  readonly #fetch: typeof fetch;
  readonly #onAttempt: ((info: WebhookAttemptInfo) => void) | undefined;

  constructor(options: WebhookExecutorOptions = {}) {
    this.#maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 3));
    this.#backoff = { baseDelayMs: options.baseDelayMs ?? 250, maxDelayMs: options.maxDelayMs ?? 5000 };
    this.#maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.#random = options.random ?? Math.random;
    this.#fetch = options.fetch ?? createEgressFetch({ policy: options.egress ?? new EgressPolicy() });
    this.#onAttempt = options.onAttempt;
  }

  /** Calls the webhook until it answers for good or the attempts run out; rejects only on cancel. */
  async call(request: WebhookRequest): Promise<WebhookResult> {
    const { signal } = request;
    if (!isHttpUrl(request.url)) {
      return {
        ok: false,
        attempts: 0,
        error: { code: 'tool_misconfigured', message: 'the tool has no valid http(s) webhook URL' },
      };
    }
    const { body, signature } = signedBody(request);
    let failure: { error: ToolError; status?: number } = {
      error: { code: 'webhook_unreachable', message: 'the webhook was not called' },
    };
    for (let attempt = 1; attempt <= this.#maxAttempts; attempt++) {
      if (signal?.aborted) throw new ToolCallCancelledError(signal.reason);
      const started = performance.now();
      const outcome = await this.#attempt(request, body, signature, attempt);
      const durationMs = Math.round(performance.now() - started);
      if (outcome.kind === 'cancelled') throw new ToolCallCancelledError(signal?.reason);
      if (outcome.kind === 'final') {
        const { result } = outcome;
        const errorCode = result.ok ? undefined : result.error.code;
        this.#onAttempt?.({ attempt, status: result.status, errorCode, willRetry: false, durationMs });
        return result;
      }
      failure = outcome;
      const willRetry = attempt < this.#maxAttempts;
      const delayMs = willRetry ? backoffDelayMs(attempt, this.#backoff, this.#random) : undefined;
      const { status, error } = outcome;
      this.#onAttempt?.({ attempt, status, errorCode: error.code, willRetry, delayMs, durationMs });
      if (delayMs !== undefined) await pauseBeforeRetry(delayMs, signal);
    }
    const attempts = this.#maxAttempts;
    return {
      ok: false,
      attempts,
      status: failure.status,
      error: { code: failure.error.code, message: `${failure.error.message} (${attempts} attempts)` },
    };
  }

  /** One signed POST of the call, within its timeout: a final answer, one worth retrying, or cancelled. */
  async #attempt(
    request: WebhookRequest,
    body: Buffer,
    signature: string,
    attempt: number,
  ): Promise<Attempt> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('webhook attempt timed out')), request.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout.signal]) : timeout.signal;
    try {
      const response = await this.#fetch(request.url, {
        method: 'POST',
        body,
        signal,
        // A redirect would re-send (or drop) a signed POST somewhere the tenant did not configure.
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'idempotency-key': request.toolCallId,
          'x-keel-signature': signature,
          'x-keel-attempt': String(attempt),
          'user-agent': this.#userAgent,
        },
      });
      return await this.#answered(response, attempt);
    } catch (error) {
      if (request.signal?.aborted) return { kind: 'cancelled' };
      return failedAttempt(error, attempt, timeout.signal.aborted ? request.timeoutMs : undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  /** What an answer means: 2xx read as the result, 5xx worth retrying, anything else final. */
  async #answered(response: Response, attempt: number): Promise<Attempt> {
    const { status } = response;
    if (status >= 200 && status < 300)
      return { kind: 'final', result: await this.#success(response, attempt) };
    const snippet = await readSnippet(response);
    const error = {
      code: `webhook_status_${status}`,
      message:
        `the webhook answered ${status}${response.statusText ? ` ${response.statusText}` : ''}` +
        (status >= 300 && status < 400 ? ' (redirects are not followed)' : '') +
        (snippet ? `: ${snippet}` : ''),
    };
    if (status >= 500) return { kind: 'retryable', error, status };
    return { kind: 'final', result: { ok: false, attempts: attempt, status, error } };
  }

  async #success(response: Response, attempt: number): Promise<WebhookResult> {
    const { status } = response;
    const fail = (code: string, message: string): WebhookResult => ({
      ok: false,
      attempts: attempt,
      status,
      error: { code, message },
    });
    const declared = Number(response.headers.get('content-length') ?? NaN);
    if (declared > this.#maxResponseBytes) {
      await response.body?.cancel().catch(() => undefined);
      return fail('webhook_response_too_large', this.#tooLargeMessage());
    }
    const read = await readBody(response, this.#maxResponseBytes);
    if (read.truncated) return fail('webhook_response_too_large', this.#tooLargeMessage());
    const text = read.bytes.toString('utf8');
    try {
      if (text.trim() === '') throw new SyntaxError('empty body');
      return { ok: true, result: JSON.parse(text) as unknown, attempts: attempt, status };
    } catch {
      const type = response.headers.get('content-type');
      return fail(
        'webhook_invalid_json',
        `the webhook answered ${status} but its body is not JSON` +
          (type ? ` (content-type ${type.slice(0, 100)})` : '') +
          (text.trim() === '' ? ' (empty body)' : `: ${snippetOf(text)}`),
      );
    }
  }

  #tooLargeMessage(): string {
    return `the webhook's response is larger than the ${this.#maxResponseBytes}-byte limit`;
  }
}

/** A short, secret-free reason for a network failure (`ECONNREFUSED`, `ENOTFOUND`, …). */
/**
 * The body a webhook receives (its call's ids, tenant and arguments; the end user `{ id, role }`
 * and the conversation's `metadata` when the call was recorded with them) and its signature.
 */
const signedBody = (request: WebhookRequest): { body: Buffer; signature: string } => {
  const { toolCallId, conversationId, tenantId, args, caller } = request;
  const forUser = caller
    ? {
        ...(caller.user ? { user: { id: caller.user.id, role: caller.user.role ?? null } } : {}),
        metadata: caller.metadata ?? {},
      }
    : {};
  const body = Buffer.from(
    JSON.stringify({ toolCallId, conversationId, tenantId, args, ...forUser }),
    'utf8',
  );
  return { body, signature: signBody(request.secret, body) };
};

/** Waits out the backoff before the next attempt; a cancel during it cancels the call. */
const pauseBeforeRetry = async (delayMs: number, signal: AbortSignal | undefined): Promise<void> => {
  try {
    await sleep(delayMs, signal);
  } catch (error) {
    throw new ToolCallCancelledError(error);
  }
};

/**
 * An attempt that got no answer: refused by the egress guard (final: the URL points inside, or
 * resolves there, and retrying would not change that), timed out (`timedOutAfterMs`) or not
 * reached (both worth retrying).
 */
const failedAttempt = (error: unknown, attempt: number, timedOutAfterMs: number | undefined): Attempt => {
  const denied = egressDeniedIn(error);
  if (denied) {
    const result: WebhookResult = {
      ok: false,
      attempts: attempt,
      error: { code: 'egress_denied', message: denied.message },
    };
    return { kind: 'final', result };
  }
  if (timedOutAfterMs !== undefined) {
    return {
      kind: 'retryable',
      error: { code: 'webhook_timeout', message: `the webhook did not answer within ${timedOutAfterMs} ms` },
    };
  }
  return {
    kind: 'retryable',
    error: {
      code: 'webhook_unreachable',
      message: `the webhook could not be reached (${networkCause(error)})`,
    },
  };
};

const networkCause = (error: unknown): string => {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  return 'network error';
};

/** http(s) without credentials in the URL (fetch refuses those, and they would end up in logs). */
const isHttpUrl = (url: string): boolean => {
  try {
    const { protocol, username, password } = new URL(url);
    return (protocol === 'http:' || protocol === 'https:') && username === '' && password === '';
  } catch {
    return false;
  }
};

function packageVersion(): string {
  try {
    // src/execution/ and dist/execution/ both sit two levels below the package root.
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}
