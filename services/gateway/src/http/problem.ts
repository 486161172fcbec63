import { STATUS_CODES } from 'node:http';
import type { KeelErrorCode } from '@keel/core';
import { BudgetExceededError, ConflictError, KeelError, ValidationError } from '@keel/core';

/** The stable machine words of API.md's error contract, plus `internal` for a server fault. */
export type ProblemCode =
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'invalid_request'
  | 'conflict'
  | 'rate_limited'
  | 'payload_too_large'
  | 'budget_exceeded'
  | 'unavailable'
  | 'internal';

/** An RFC 9457 problem body with the API's `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
}

/** What a client is told about an unexpected error: its cause may hold anything. */
export const INTERNAL_DETAIL = 'internal error';

/** The shape of Nest's HttpException that matters here (kept structural: no Nest import). */
interface HttpLikeError {
  getStatus(): number;
  message: string;
  cause?: unknown;
}

const problem = (status: number, code: ProblemCode, detail: string): Problem => ({
  type: 'about:blank',
  title: STATUS_CODES[status] ?? 'Error',
  status,
  detail,
  code,
});

const KEEL_STATUS: Readonly<Record<Exclude<KeelErrorCode, 'INTERNAL'>, [number, ProblemCode]>> = {
  INVALID_ARGUMENT: [400, 'invalid_request'],
  NOT_FOUND: [404, 'not_found'],
  ALREADY_EXISTS: [409, 'conflict'],
  ABORTED: [409, 'conflict'],
  FAILED_PRECONDITION: [400, 'invalid_request'],
  PERMISSION_DENIED: [403, 'forbidden'],
  UNAUTHENTICATED: [401, 'unauthenticated'],
  RESOURCE_EXHAUSTED: [429, 'rate_limited'],
  UNAVAILABLE: [503, 'unavailable'],
  DEADLINE_EXCEEDED: [503, 'unavailable'],
};

const CODE_OF_STATUS: Readonly<Record<number, ProblemCode>> = {
  400: 'invalid_request',
  401: 'unauthenticated',
  402: 'budget_exceeded',
  403: 'forbidden',
  404: 'not_found',
  405: 'invalid_request',
  409: 'conflict',
  413: 'payload_too_large',
  429: 'rate_limited',
  503: 'unavailable',
};

/** Fastify's body errors, named by their codes so the detail can say what was wrong with the body. */
const BODY_ERRORS: Readonly<Record<string, string>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'body: is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body: is empty but content-type is application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'body: is larger than the 1 MiB limit',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'body: unsupported content-type (send application/json)',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'body: its length does not match content-length',
};

const isHttpLike = (error: unknown): error is HttpLikeError =>
  typeof error === 'object' &&
  error !== null &&
  typeof (error as { getStatus?: unknown }).getStatus === 'function';

const fastifyCodeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('FST_') ? code : undefined;
};

/** A validation message that does not start with the failing field gets the field in front. */
const detailOf = (error: KeelError): string => {
  const field = error instanceof ValidationError ? error.field : error.details['field'];
  if (typeof field !== 'string' || field === '' || error.message.startsWith(field)) return error.message;
  return `${field}: ${error.message}`;
};

/**
 * The problem an error is answered with, mapped once for the whole HTTP edge. `internal` is true
 * when the error is a server fault: its cause must be logged, and only a generic detail is sent.
 */
export function problemOf(error: unknown): { problem: Problem; internal: boolean } {
  if (error instanceof KeelError) {
    if (error.code === 'INTERNAL')
      return { problem: problem(500, 'internal', INTERNAL_DETAIL), internal: true };
    if (error instanceof ConflictError) {
      return { problem: problem(409, 'conflict', error.message), internal: false };
    }
    if (error instanceof BudgetExceededError) {
      return { problem: problem(402, 'budget_exceeded', error.message), internal: false };
    }
    const [status, code] = KEEL_STATUS[error.code];
    return { problem: problem(status, code, detailOf(error)), internal: false };
  }
  // Nest's HttpException, including Fastify's own errors that Nest wraps (cause: the FastifyError).
  const direct = isHttpLike(error) ? undefined : (error as { statusCode?: unknown } | null)?.statusCode;
  const status = isHttpLike(error) ? error.getStatus() : typeof direct === 'number' ? direct : undefined;
  if (status !== undefined && status >= 400 && status < 500) {
    const fastifyCode = fastifyCodeOf((error as { cause?: unknown }).cause) ?? fastifyCodeOf(error);
    const detail =
      (fastifyCode ? BODY_ERRORS[fastifyCode] : undefined) ??
      String((error as { message?: unknown }).message);
    return { problem: problem(status, CODE_OF_STATUS[status] ?? 'invalid_request', detail), internal: false };
  }
  if (status === 503) {
    return { problem: problem(503, 'unavailable', 'service unavailable, retry later'), internal: false };
  }
  return { problem: problem(500, 'internal', INTERNAL_DETAIL), internal: true };
}
