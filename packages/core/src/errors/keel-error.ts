/** The closed set of error codes, named after gRPC status codes so both edges map them once. */
export type KeelErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'INTERNAL';

/** Base of every error Keel raises on purpose; anything else is INTERNAL at the edges. */
export class KeelError extends Error {
  constructor(
    readonly code: KeelErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.details = options?.details ?? {};
  }
  readonly details: Record<string, unknown>;
}

/** Input that fails validation; `field` names what is wrong. */
export class ValidationError extends KeelError {
  constructor(
    message: string,
    options?: { field?: string; cause?: unknown; details?: Record<string, unknown> },
  ) {
    super('INVALID_ARGUMENT', message, {
      cause: options?.cause,
      details: { ...options?.details, ...(options?.field ? { field: options.field } : {}) },
    });
    this.field = options?.field;
  }
  readonly field: string | undefined;
}

/** An event or commit larger than the store accepts. */
export class EventTooLargeError extends ValidationError {
  constructor(
    readonly sizeBytes: number,
    readonly limitBytes: number,
    what: 'event' | 'commit' = 'event',
  ) {
    super(`${what} is ${sizeBytes} bytes, over the ${limitBytes}-byte limit`, {
      field: what === 'event' ? 'events[].data' : 'events',
      details: { sizeBytes, limitBytes },
    });
  }
}

/** A resource that does not exist for the caller (another tenant's resource is also this). */
export class NotFoundError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('NOT_FOUND', message, options);
  }
}

/** A resource that already exists where the caller needed it not to. */
export class AlreadyExistsError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('ALREADY_EXISTS', message, options);
  }
}

/**
 * The request lost to the resource's current state (a busy conversation, a decided approval, a
 * reused Idempotency-Key): gRPC ABORTED, HTTP 409 `conflict`. Re-reading may show what to do.
 */
export class ConflictError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('ABORTED', message, options);
  }
}

/** Optimistic concurrency lost: the stream is not at the version the writer expected. */
export class ConcurrencyError extends ConflictError {
  constructor(
    readonly streamName: string,
    readonly expected: string | number,
    readonly actual: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `stream ${streamName}: expected version ${String(expected)}, actual ${actual === undefined ? 'unknown' : actual}`,
      { cause: options?.cause, details: { streamName, expected, actual } },
    );
  }
}

/** The operation is not allowed in the current state (e.g. a decided approval). */
export class PreconditionError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('FAILED_PRECONDITION', message, options);
  }
}

/** The caller is known but its role does not allow the operation. */
export class PermissionDeniedError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('PERMISSION_DENIED', message, options);
  }
}

/** The caller could not be identified. */
export class UnauthenticatedError extends KeelError {
  constructor(message = 'missing or invalid credentials', options?: { cause?: unknown }) {
    super('UNAUTHENTICATED', message, options);
  }
}

/** A quota, rate limit or budget is used up. */
export class ResourceExhaustedError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('RESOURCE_EXHAUSTED', message, options);
  }
}

/** The tenant's budget is used up: HTTP 402 `budget_exceeded`, not 429 (waiting does not help). */
export class BudgetExceededError extends ResourceExhaustedError {}

/** A dependency (store, bus, provider) cannot be reached now; retrying later may work. */
export class UnavailableError extends KeelError {
  constructor(message: string, options?: { cause?: unknown; details?: Record<string, unknown> }) {
    super('UNAVAILABLE', message, options);
  }
}

/** True for errors the caller may retry as they are (conflicts, unavailability). */
export const isRetryable = (error: unknown): boolean =>
  error instanceof ConcurrencyError || error instanceof UnavailableError;

/**
 * What a status code alone does not tell apart, named on the wire beside it (the gRPC trailer
 * `keel-error`) so the receiving edge rebuilds the same class. ABORTED needs none: it is always a
 * ConflictError.
 */
export type KeelErrorKind = 'budget_exceeded';

/** The gRPC trailer that carries a KeelErrorKind. */
export const KEEL_ERROR_KIND_KEY = 'keel-error';

/** The kind of an error that needs one on the wire. */
export const kindOf = (error: KeelError): KeelErrorKind | undefined =>
  error instanceof BudgetExceededError ? 'budget_exceeded' : undefined;

/** The message of anything thrown, for a log line or a test: an Error's message, else its string. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
