import type { ServiceError } from '@grpc/grpc-js';
import { Metadata, status } from '@grpc/grpc-js';
import { KeelError, UnavailableError } from '@keel/core';
import { grpcStatusOf } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { pricingErrorOf } from './pricing.client.js';

const failure = (code: status, details: string): ServiceError =>
  Object.assign(new Error(details), { code, details, metadata: new Metadata() });

describe('pricingErrorOf', () => {
  it("passes the pricing service's typed statuses on with its message", () => {
    const error = pricingErrorOf(failure(status.NOT_FOUND, 'no price for nobody:x'));
    expect(grpcStatusOf(error)).toEqual({ code: status.NOT_FOUND, message: 'no price for nobody:x' });
    expect(grpcStatusOf(pricingErrorOf(failure(status.INVALID_ARGUMENT, 'model: required'))).code).toBe(
      status.INVALID_ARGUMENT,
    );
  });

  it('answers an unreachable or slow pricing service UNAVAILABLE, and hides anything else as INTERNAL', () => {
    expect(pricingErrorOf(failure(status.DEADLINE_EXCEEDED, 'deadline'))).toBeInstanceOf(UnavailableError);
    expect(pricingErrorOf(failure(status.UNAVAILABLE, 'connect ECONNREFUSED'))).toBeInstanceOf(
      UnavailableError,
    );
    const internal = pricingErrorOf(failure(status.INTERNAL, 'stack trace with secrets'));
    expect(internal).not.toBeInstanceOf(KeelError);
    expect(grpcStatusOf(internal)).toEqual({ code: status.INTERNAL, message: 'internal error' });
  });
});
