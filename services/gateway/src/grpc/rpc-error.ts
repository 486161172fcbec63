import { Metadata } from '@grpc/grpc-js';
import type { LogPort } from '@keel/core';
import { toRpcException } from '@keel/runtime';
import type { RpcException } from '@nestjs/microservices';
import { RateLimitedError, retryAfterSeconds } from '../rate-limit/rate-limit.service.js';

/** An RpcException grpc-js can also read directly (`code`, `details`, `metadata`). */
export type GatewayRpcError = RpcException & { code: number; details: string; metadata: Metadata };

/**
 * The status a failed gateway RPC ends with, mapped once (grpc-status.ts): KeelErrors by code,
 * anything else INTERNAL with its cause logged. The exception also carries `code`/`details` as
 * own fields, so the status survives whichever exception filter hands it to grpc-js; a rate-limit
 * refusal adds `retry-after` (seconds) to the trailers, beside the edge's `keel-error`.
 */
export const rpcErrorOf = (
  error: unknown,
  logger: Pick<LogPort, 'error'>,
  context: Record<string, unknown>,
): GatewayRpcError => {
  const exception = toRpcException(error, logger, context);
  const status = exception.getError() as { code: number; message: string; metadata?: Metadata };
  // The trailers the edge set (`keel-error` on a budget refusal), plus the gateway's own.
  const metadata = status.metadata ?? new Metadata();
  if (error instanceof RateLimitedError)
    metadata.set('retry-after', String(retryAfterSeconds(error.decision)));
  return Object.assign(exception, { code: status.code, details: status.message, metadata });
};
