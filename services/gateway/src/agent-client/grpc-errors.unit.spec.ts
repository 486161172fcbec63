import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { problemOf } from '../http/problem.js';
import { keelErrorOf } from './grpc-errors.js';

/** The problem a failed agent call is answered with at the HTTP edge. */
const answered = (code: number, details: string, trailers: Record<string, string> = {}) => {
  const metadata = { get: (key: string) => (key in trailers ? [trailers[key]] : []) };
  const error = keelErrorOf({ code, details, metadata });
  return error === undefined ? undefined : problemOf(error).problem;
};

describe('keelErrorOf: agent statuses as the HTTP edge answers them', () => {
  it('keeps the agent message of INVALID_ARGUMENT, NOT_FOUND and PERMISSION_DENIED', () => {
    expect(answered(status.INVALID_ARGUMENT, 'tools: unknown tools: teleport')).toMatchObject({
      status: 400,
      code: 'invalid_request',
      detail: 'tools: unknown tools: teleport',
    });
    expect(answered(status.NOT_FOUND, 'conversation not found')).toMatchObject({
      status: 404,
      code: 'not_found',
      detail: 'conversation not found',
    });
    expect(answered(status.PERMISSION_DENIED, 'needs editor')).toMatchObject({
      status: 403,
      code: 'forbidden',
    });
  });

  it('answers ABORTED (busy, decided, nothing to cancel) as 409 conflict', () => {
    expect(answered(status.ABORTED, 'a turn is already running')).toMatchObject({
      status: 409,
      code: 'conflict',
      detail: 'a turn is already running',
    });
  });

  it("answers the agent's budget refusal (the keel-error trailer names it) as 402 budget_exceeded", () => {
    expect(
      answered(
        status.RESOURCE_EXHAUSTED,
        'the monthly budget of 1 USD is used up for 2026-11 (UTC): 1 USD spent, 0 USD reserved by running turns',
        { 'keel-error': 'budget_exceeded' },
      ),
    ).toMatchObject({
      status: 402,
      code: 'budget_exceeded',
      detail:
        'the monthly budget of 1 USD is used up for 2026-11 (UTC): 1 USD spent, 0 USD reserved by running turns',
    });
  });

  it('answers another RESOURCE_EXHAUSTED as 429, even when its message mentions a budget', () => {
    expect(answered(status.RESOURCE_EXHAUSTED, 'token budget of the step exhausted')).toMatchObject({
      status: 429,
      code: 'rate_limited',
    });
  });

  it('answers an unreachable or slow agent as 503 unavailable', () => {
    for (const code of [status.UNAVAILABLE, status.DEADLINE_EXCEEDED]) {
      expect(answered(code, 'No connection established')).toMatchObject({ status: 503, code: 'unavailable' });
    }
  });

  it('leaves INTERNAL, UNKNOWN and UNIMPLEMENTED unmapped: a server fault, never its message', () => {
    for (const code of [status.INTERNAL, status.UNKNOWN, status.UNIMPLEMENTED]) {
      expect(keelErrorOf({ code, details: 'secret detail' })).toBeUndefined();
    }
  });
});
