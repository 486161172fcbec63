import type { Metadata } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import {
  AlreadyExistsError,
  BudgetExceededError,
  ConcurrencyError,
  ConflictError,
  KEEL_ERROR_KIND_KEY,
  KeelError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from '@keel/core';
import { RpcException } from '@nestjs/microservices';
import { describe, expect, it, vi } from 'vitest';
import {
  INTERNAL_ERROR_MESSAGE,
  MAX_STATUS_MESSAGE_CHARS,
  grpcStatusOf,
  toRpcException,
} from './grpc-status.js';

describe('grpcStatusOf', () => {
  it.each([
    [new NotFoundError('conversation not found'), status.NOT_FOUND],
    [new AlreadyExistsError('tenant exists'), status.ALREADY_EXISTS],
    [new PreconditionError('the agent has no model'), status.FAILED_PRECONDITION],
    [new ConcurrencyError('conversation-c1', 3, 4), status.ABORTED],
    [new PermissionDeniedError('admin only'), status.PERMISSION_DENIED],
    [new UnauthenticatedError(), status.UNAUTHENTICATED],
    [new ResourceExhaustedError('budget exceeded'), status.RESOURCE_EXHAUSTED],
    [new UnavailableError('NATS is down'), status.UNAVAILABLE],
    [new KeelError('DEADLINE_EXCEEDED', 'the provider took too long'), status.DEADLINE_EXCEEDED],
  ])('maps %s to its status with its own message', (error, code) => {
    expect(grpcStatusOf(error)).toEqual({ code, message: error.message });
  });

  it('answers a conflict (busy conversation, decided approval) with ABORTED', () => {
    const conflict = new ConflictError('a turn is already running', { details: { turnId: 't1' } });
    expect(grpcStatusOf(conflict)).toEqual({ code: status.ABORTED, message: 'a turn is already running' });
  });

  it('names a budget refusal in the keel-error trailer, beside RESOURCE_EXHAUSTED', () => {
    const refusal = new BudgetExceededError('the monthly budget of 1 USD is used up');
    expect(grpcStatusOf(refusal)).toEqual({
      code: status.RESOURCE_EXHAUSTED,
      message: refusal.message,
      kind: 'budget_exceeded',
    });
    const sent = toRpcException(refusal).getError() as { code: number; metadata: Metadata };
    expect(sent.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(sent.metadata.get(KEEL_ERROR_KIND_KEY)).toEqual(['budget_exceeded']);
    expect(toRpcException(new ResourceExhaustedError('slow down')).getError()).not.toHaveProperty('metadata');
  });

  it('starts the message of a validation error with the failing field, once', () => {
    expect(grpcStatusOf(new ValidationError('unknown tools: nope', { field: 'tools' }))).toEqual({
      code: status.INVALID_ARGUMENT,
      message: 'tools: unknown tools: nope',
    });
    expect(grpcStatusOf(new ValidationError('content must not be empty', { field: 'content' }))).toEqual({
      code: status.INVALID_ARGUMENT,
      message: 'content must not be empty',
    });
    expect(grpcStatusOf(new ValidationError('bad request'))).toEqual({
      code: status.INVALID_ARGUMENT,
      message: 'bad request',
    });
  });

  it('never sends the message of an unexpected error or an INTERNAL KeelError', () => {
    for (const error of [
      new Error('connect ECONNREFUSED mongodb://admin:hunter2@db:27017'),
      new KeelError('INTERNAL', 'secret detail'),
      'a thrown string',
      undefined,
    ]) {
      expect(grpcStatusOf(error)).toEqual({ code: status.INTERNAL, message: INTERNAL_ERROR_MESSAGE });
    }
  });
});

describe('toRpcException', () => {
  it('carries { code, message } for Nest to set as the call status, and logs nothing for a known error', () => {
    const logger = { error: vi.fn() };
    const exception = toRpcException(new NotFoundError('approval not found'), logger);
    expect(exception).toBeInstanceOf(RpcException);
    expect(exception.getError()).toEqual({ code: status.NOT_FOUND, message: 'approval not found' });
    expect(logger.error).not.toHaveBeenCalled();
  });

  it('logs the cause of an INTERNAL error with the call context and sends only the generic message', () => {
    const logger = { error: vi.fn() };
    const cause = new Error('secret detail');
    const exception = toRpcException(cause, logger, { rpc: 'PutTool', tenantId: 'acme' });
    expect(exception.getError()).toEqual({ code: status.INTERNAL, message: INTERNAL_ERROR_MESSAGE });
    expect(logger.error).toHaveBeenCalledWith(
      { rpc: 'PutTool', tenantId: 'acme', err: cause },
      'gRPC call failed',
    );
  });

  it('passes an RpcException through unchanged', () => {
    const already = new RpcException({ code: status.UNIMPLEMENTED, message: 'later' });
    expect(toRpcException(already)).toBe(already);
  });
});

describe('status messages stay small', () => {
  it('cuts a message past 1,000 characters (it travels in the HTTP/2 trailers), never inside a surrogate pair', () => {
    const names = Array.from({ length: 100_000 }, (_, i) => `t${i}`).join(', ');
    const { message } = grpcStatusOf(new ValidationError(`unknown tools: ${names}`, { field: 'tools' }));
    expect(message.length).toBeLessThanOrEqual(MAX_STATUS_MESSAGE_CHARS);
    expect(message).toMatch(/^tools: unknown tools: t0, t1, .*…$/);
    const emoji = grpcStatusOf(new ValidationError(`x: ${'😀'.repeat(2_000)}`, { field: 'x' })).message;
    expect(emoji.length).toBeLessThanOrEqual(MAX_STATUS_MESSAGE_CHARS);
    expect(/\p{Surrogate}/u.test(emoji)).toBe(false);
  });
});
