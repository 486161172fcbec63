import { KeelError, ResourceExhaustedError, UnavailableError, ValidationError, messageOf } from '@keel/core';

/** The error a model call rejects with once its signal aborted: `name` is `AbortError`, as `fetch` does. */
export const abortError = (signal: AbortSignal): Error => {
  const error = new Error('the model call was aborted', { cause: signal.reason });
  error.name = 'AbortError';
  return error;
};

/** Rejects with `abortError` as soon as `signal` aborts, whatever `promise` does by then. */
export const raceAbort = <T>(promise: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
};

const NETWORK_ERROR_NAMES = new Set(['APIConnectionError', 'APIConnectionTimeoutError', 'TimeoutError']);
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * A provider failure as a KeelError: 5xx, 408 and network failures are `UnavailableError`
 * (retryable), 429 `ResourceExhaustedError`, other 4xx `ValidationError` (a bad key, model or
 * request: retrying will not help). The provider's message is kept with `secrets` and URLs blanked out, and
 * the original error stays as `cause` unless its message holds a secret. Anything else (a bug, a
 * malformed response) is returned as it is, with secrets blanked out, for the edge to report as
 * INTERNAL.
 */
export const toModelError = (error: unknown, provider: string, secrets: Array<string | undefined>): Error => {
  if (error instanceof KeelError) return error;
  const raw = messageOf(error);
  const message = redact(raw, secrets);
  const cause = message === raw ? error : undefined;
  const status = httpStatus(error);
  const details = { provider, ...(status === undefined ? {} : { status }) };
  const options = { cause, details };
  if (status !== undefined) {
    const text = `${provider} answered ${status}: ${message}`;
    if (status === 429) return new ResourceExhaustedError(text, options);
    if (status >= 400 && status < 500 && status !== 408) return new ValidationError(text, options);
    return new UnavailableError(text, options);
  }
  if (isNetworkError(error)) {
    return new UnavailableError(`${provider} could not be reached: ${message}`, options);
  }
  if (error instanceof Error && message === raw) return error;
  return new Error(message);
};

/** An address inside a provider's message (`Error fetching from https://10.0.0.5/v1/…`). */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>)]+/gi;

/**
 * The message with `secrets` blanked out and every URL replaced by `<provider endpoint>`: the
 * platform's own base URL may be an internal host, and a turn's error is shown to the tenant.
 */
const redact = (text: string, secrets: Array<string | undefined>): string => {
  let result = text.replace(URL_IN_TEXT, '<provider endpoint>');
  for (const secret of secrets) {
    if (secret && secret.length >= 4) result = result.split(secret).join('[redacted]');
  }
  return result;
};

/** The HTTP status of an SDK error: `status` (OpenAI, Anthropic, Google) or `status_code` (Ollama). */
const httpStatus = (error: unknown): number | undefined => {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as Record<string, unknown>;
  for (const key of ['status', 'status_code', 'statusCode']) {
    const value = record[key];
    if (typeof value === 'number' && Number.isInteger(value) && value >= 400 && value < 600) return value;
  }
  return undefined;
};

const isNetworkError = (error: unknown): boolean => {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    if (NETWORK_ERROR_NAMES.has(current.name)) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    if (current instanceof TypeError && current.message === 'fetch failed') return true;
    // @google/generative-ai rewraps a failed fetch without its cause.
    if (/^\[GoogleGenerativeAI Error\]: Error fetching from .*: fetch failed$/.test(current.message))
      return true;
    current = current.cause;
  }
  return false;
};
