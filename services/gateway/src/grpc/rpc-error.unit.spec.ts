import { status } from '@grpc/grpc-js';
import { BudgetExceededError, ConflictError, KEEL_ERROR_KIND_KEY } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { rpcErrorOf } from './rpc-error.js';

const logger = { error: () => undefined };

describe('rpcErrorOf (the gateway gRPC edge)', () => {
  it('keeps the keel-error trailer of a budget refusal, as the agent sends it', () => {
    const error = rpcErrorOf(new BudgetExceededError('the monthly budget is used up'), logger, {});
    expect(error.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(error.details).toBe('the monthly budget is used up');
    expect(error.metadata.get(KEEL_ERROR_KIND_KEY)).toEqual(['budget_exceeded']);
  });

  it('answers a conflict ABORTED with no kind', () => {
    const error = rpcErrorOf(new ConflictError('a turn is already running'), logger, {});
    expect(error.code).toBe(status.ABORTED);
    expect(error.metadata.get(KEEL_ERROR_KIND_KEY)).toEqual([]);
  });
});
