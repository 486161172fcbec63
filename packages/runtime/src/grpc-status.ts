import { status as GrpcStatus, Metadata } from '@grpc/grpc-js';
import type { KeelErrorCode, KeelErrorKind } from '@keel/core';
import { KEEL_ERROR_KIND_KEY, KeelError, ValidationError, kindOf } from '@keel/core';
import { RpcException } from '@nestjs/microservices';
import type { LogPort } from '@keel/core';

/** What a gRPC caller is told about a failed call: the status code and a message safe to send. */
export interface GrpcErrorStatus {
  code: GrpcStatus;
  message: string;
  /** What the code alone does not say (a conflict, a budget refusal), sent as the `keel-error` trailer. */
  kind?: KeelErrorKind;
}

/** The only message an unexpected error is answered with: its cause may hold anything. */
export const INTERNAL_ERROR_MESSAGE = 'internal error';

const STATUS_OF_CODE: Readonly<Record<KeelErrorCode, GrpcStatus>> = {
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  FAILED_PRECONDITION: GrpcStatus.FAILED_PRECONDITION,
  ABORTED: GrpcStatus.ABORTED,
  PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  UNAUTHENTICATED: GrpcStatus.UNAUTHENTICATED,
  RESOURCE_EXHAUSTED: GrpcStatus.RESOURCE_EXHAUSTED,
  UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  DEADLINE_EXCEEDED: GrpcStatus.DEADLINE_EXCEEDED,
  INTERNAL: GrpcStatus.INTERNAL,
};

/**
 * The gRPC status of an error, mapped once at the edge. A KeelError's code names its status and
 * its class the kind the receiving edge rebuilds (a ConflictError, a BudgetExceededError). A
 * validation error's message starts with the failing field. An INTERNAL KeelError or any other
 * error is INTERNAL with a generic message; its cause must be logged, not sent.
 */
export function grpcStatusOf(error: unknown): GrpcErrorStatus {
  if (!(error instanceof KeelError) || error.code === 'INTERNAL') {
    return { code: GrpcStatus.INTERNAL, message: INTERNAL_ERROR_MESSAGE };
  }
  const kind = kindOf(error);
  return { code: STATUS_OF_CODE[error.code], message: statusMessageOf(error), ...(kind ? { kind } : {}) };
}

/**
 * Longest status message sent (characters). The message travels in the HTTP/2 trailers: one past
 * the peer's header-list limit (a validation message echoing a 100,000-name list) stalls the whole
 * connection, every other tenant's calls on it included, until they time out.
 */
export const MAX_STATUS_MESSAGE_CHARS = 1_000;

/** A validation message that does not start with the field it is about gets the field in front. */
const statusMessageOf = (error: KeelError): string => {
  const field = error instanceof ValidationError ? error.field : error.details['field'];
  const message =
    typeof field !== 'string' || field === '' || error.message.startsWith(field)
      ? error.message
      : `${field}: ${error.message}`;
  if (message.length <= MAX_STATUS_MESSAGE_CHARS) return message;
  // Not between the two halves of a surrogate pair.
  const cut = /[\uD800-\uDBFF]/.test(message[MAX_STATUS_MESSAGE_CHARS - 2]!) ? 2 : 1;
  return `${message.slice(0, MAX_STATUS_MESSAGE_CHARS - cut)}…`;
};

/**
 * The RpcException Nest's gRPC transport turns into the call's status (`{ code, message }`).
 * An INTERNAL outcome logs the original error with `context` (tenant, RPC, correlation id).
 */
export function toRpcException(
  error: unknown,
  logger?: Pick<LogPort, 'error'>,
  context: Record<string, unknown> = {},
): RpcException {
  if (error instanceof RpcException) return error;
  const mapped = grpcStatusOf(error);
  if (mapped.code === GrpcStatus.INTERNAL) logger?.error({ ...context, err: error }, 'gRPC call failed');
  if (!mapped.kind) return new RpcException({ code: mapped.code, message: mapped.message });
  // grpc-js sends an error's `metadata` as the trailers of the status.
  const metadata = new Metadata();
  metadata.set(KEEL_ERROR_KIND_KEY, mapped.kind);
  return new RpcException({ code: mapped.code, message: mapped.message, metadata });
}
