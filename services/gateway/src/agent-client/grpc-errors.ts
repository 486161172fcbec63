import { status } from '@grpc/grpc-js';
import type { KeelError } from '@keel/core';
import {
  AlreadyExistsError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionError,
  ResourceExhaustedError,
  UnavailableError,
  ValidationError,
} from '@keel/core';
import { BUDGET_EXCEEDED_MARKER } from '@keel/events';

/** The part of a grpc-js ServiceError the mapping reads. */
export interface GrpcFailure {
  code?: number;
  details?: string;
  message?: string;
}

/**
 * The agent's budget refusal: RESOURCE_EXHAUSTED whose message starts with the budget marker
 * (a status carries only a code and a message), answered 402 `budget_exceeded` with the marker cut.
 */
const budgetRefusal = (message: string, cause: GrpcFailure): KeelError | undefined => {
  const marker = `${BUDGET_EXCEEDED_MARKER}: `;
  if (!message.startsWith(marker)) return undefined;
  return new ResourceExhaustedError(message.slice(marker.length), { cause, details: { budget: true } });
};

/**
 * The KeelError a failed agent call is answered with at the HTTP edge, so the problem filter
 * renders it: the agent's message is kept (it names the field and never holds secrets), ABORTED
 * is a conflict (409), an unreachable or slow agent is unavailable (503). Anything else (INTERNAL,
 * UNKNOWN, UNIMPLEMENTED, a gateway-side mistake like UNAUTHENTICATED) is undefined: a server
 * fault, logged and answered 500.
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
      return new PreconditionError(message, { cause, details: { conflict: true } });
    case status.ALREADY_EXISTS:
      return new AlreadyExistsError(message, { cause });
    case status.FAILED_PRECONDITION:
      return new PreconditionError(message, { cause });
    case status.PERMISSION_DENIED:
      return new PermissionDeniedError(message, { cause });
    case status.RESOURCE_EXHAUSTED:
      return budgetRefusal(message, cause) ?? new ResourceExhaustedError(message, { cause });
    case status.UNAVAILABLE:
    case status.DEADLINE_EXCEEDED:
      return new UnavailableError('the agent service is unavailable, retry later', { cause });
    default:
      return undefined;
  }
};
