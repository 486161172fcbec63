import {
  BudgetExceededError,
  ConcurrencyError,
  ConflictError,
  KeelError,
  NotFoundError,
  PermissionDeniedError,
  PreconditionError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from '@keel/core';
import { HttpException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { INTERNAL_DETAIL, problemOf } from './problem.js';

const fastifyError = (code: string, statusCode: number, message: string) =>
  Object.assign(new Error(message), { code, statusCode });

describe('problemOf (the HTTP error contract)', () => {
  it('maps KeelError codes to the API statuses and codes', () => {
    const cases: Array<[unknown, number, string]> = [
      [new ValidationError('too long', { field: 'name' }), 400, 'invalid_request'],
      [new NotFoundError('no such tenant'), 404, 'not_found'],
      [new ConcurrencyError('tenants-registry', 3, 4), 409, 'conflict'],
      [new ConflictError('turn running'), 409, 'conflict'],
      [new PreconditionError('not allowed now'), 400, 'invalid_request'],
      [new PermissionDeniedError('operator only'), 403, 'forbidden'],
      [new UnauthenticatedError(), 401, 'unauthenticated'],
      [new ResourceExhaustedError('slow down'), 429, 'rate_limited'],
      [new BudgetExceededError('over budget'), 402, 'budget_exceeded'],
      [new UnavailableError('store down'), 503, 'unavailable'],
    ];
    for (const [error, status, code] of cases) {
      const { problem, internal } = problemOf(error);
      expect({ status: problem.status, code: problem.code, internal }).toEqual({
        status,
        code,
        internal: false,
      });
      expect(problem.type).toBe('about:blank');
      expect(problem.title.length).toBeGreaterThan(0);
    }
  });

  it('names the failing field in the detail of a validation error', () => {
    expect(
      problemOf(new ValidationError('must be 1 to 100 characters', { field: 'name' })).problem.detail,
    ).toBe('name: must be 1 to 100 characters');
    expect(problemOf(new ValidationError('name is required', { field: 'name' })).problem.detail).toBe(
      'name is required',
    );
  });

  it('maps Fastify body errors (wrapped by Nest) naming the body, and unknown routes to not_found', () => {
    const invalid = new HttpException('Body is not valid JSON', 400, {
      cause: fastifyError('FST_ERR_CTP_INVALID_JSON_BODY', 400, 'Body is not valid JSON'),
    });
    expect(problemOf(invalid).problem).toMatchObject({
      status: 400,
      code: 'invalid_request',
      detail: 'body: is not valid JSON',
    });
    const tooLarge = new PayloadTooLargeException('too large', {
      cause: fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413, 'Request body is too large'),
    });
    expect(problemOf(tooLarge).problem).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      title: 'Payload Too Large',
    });
    expect(problemOf(new NotFoundException('Cannot GET /v1/nope')).problem).toMatchObject({
      status: 404,
      code: 'not_found',
      detail: 'Cannot GET /v1/nope',
    });
  });

  it('answers anything else with a 500 and a generic detail, never the cause', () => {
    for (const error of [
      new Error('db password is hunter2'),
      new KeelError('INTERNAL', 'secret'),
      'thrown string',
      null,
    ]) {
      const { problem, internal } = problemOf(error);
      expect(internal).toBe(true);
      expect(problem).toEqual({
        type: 'about:blank',
        title: 'Internal Server Error',
        status: 500,
        detail: INTERNAL_DETAIL,
        code: 'internal',
      });
    }
  });
});
