import { status } from '@grpc/grpc-js';
import type { KeelError, KeelErrorKind } from '@keel/core';
import {
  AlreadyExistsError,
  BudgetExceededError,
  ConflictError,
  KEEL_ERROR_KIND_KEY,
  NotFoundError,
  PermissionDeniedError,
  PreconditionError,
  ResourceExhaustedError,
  UnavailableError,
  ValidationError,
} from '@keel/core';

/** The part of a grpc-js ServiceError the mapping reads (`metadata`: the status trailers). */
export interface GrpcFailure {
  code?: number;
  details?: string;
  message?: string;
  metadata?: { get(key: string): unknown[] };
}

/** The kind the server's edge named in the `keel-error` trailer, if any. */
const kindOf = (failure: GrpcFailure): KeelErrorKind | undefined => {
  const [kind] = failure.metadata?.get(KEEL_ERROR_KIND_KEY) ?? [];
  return kind === 'budget_exceeded' ? kind : undefined;
};

/**
 * The KeelError a failed agent call is answered with at the HTTP edge, so the problem filter
 * renders it: the agent's message is kept (it names the field and never holds secrets), ABORTED
 * is a conflict (409), RESOURCE_EXHAUSTED with the `budget_exceeded` trailer a budget refusal
 * (402), an unreachable or slow agent is unavailable (503). A SubmitMessage answered so after
 * its deadline has started no turn, save one case: the agent commits no message once too little
 * of the call's deadline is left to answer it (agent `caller-waiting.ts`), so only a commit whose
 * answer took longer than that margin is a turn the 503 hides; a retry with the same
 * Idempotency-Key answers it (other writes are not checked so). Anything else (INTERNAL, UNKNOWN,
 * UNIMPLEMENTED, a gateway-side mistake like UNAUTHENTICATED) is undefined: a server fault,
 * logged and answered 500.
 */
export const keelErrorOf = (failure: GrpcFailure): KeelError | undefined => {
  const message = failure.details || failure.message || 'agent call failed';
  const cause = failure;
  switch (failure.code) {
    case status.INVALID_ARGUMENT:
      return new ValidationError(message, { cause });
    case status.NOT_FOUND:
      return new NotFoundError(message, { cause });
    case status.ABORTED:
      return new ConflictError(message, { cause });
    case status.ALREADY_EXISTS:
      return new AlreadyExistsError(message, { cause });
    case status.FAILED_PRECONDITION:
      return new PreconditionError(message, { cause });
    case status.PERMISSION_DENIED:
      return new PermissionDeniedError(message, { cause });
    case status.RESOURCE_EXHAUSTED:
      return kindOf(failure) === 'budget_exceeded'
        ? new BudgetExceededError(message, { cause })
        : new ResourceExhaustedError(message, { cause });
    case status.UNAVAILABLE:
    case status.DEADLINE_EXCEEDED:
      return new UnavailableError('the agent service is unavailable, retry later', { cause });
    default:
      return undefined;
  }
};
