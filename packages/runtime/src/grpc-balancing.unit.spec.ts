import { connectivityState, status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { grpcTargetsOf, isDnsTarget, pickChannel, retryOnAnother } from './grpc-balancing.js';

const { READY, IDLE, CONNECTING, TRANSIENT_FAILURE } = connectivityState;

describe('grpcTargetsOf', () => {
  it('reads one address, a dns:/// name, or a comma-separated list (trimmed)', () => {
    expect(grpcTargetsOf('127.0.0.1:50052')).toEqual(['127.0.0.1:50052']);
    expect(grpcTargetsOf('dns:///agent:50052')).toEqual(['dns:///agent:50052']);
    expect(grpcTargetsOf('agent-1:50052, agent-2:50052')).toEqual(['agent-1:50052', 'agent-2:50052']);
    expect(isDnsTarget('dns:///agent:50052')).toBe(true);
    expect(isDnsTarget('agent:50052')).toBe(false);
  });

  it('refuses an empty entry instead of dropping an instance', () => {
    expect(() => grpcTargetsOf('a:1,,b:2')).toThrow(/empty entry/);
    expect(() => grpcTargetsOf('')).toThrow(/empty entry/);
  });
});

describe('pickChannel', () => {
  it('goes round-robin over connected instances', () => {
    const states = [READY, READY, READY];
    expect([0, 1, 2, 3].map((start) => pickChannel(states, start % 3))).toEqual([0, 1, 2, 0]);
  });

  it('skips an instance whose connection dropped while another is connected', () => {
    expect(pickChannel([TRANSIENT_FAILURE, READY], 0)).toBe(1);
    expect(pickChannel([IDLE, READY], 0)).toBe(1);
    expect(pickChannel([CONNECTING, TRANSIENT_FAILURE], 1)).toBe(0);
  });

  it('still tries a failing one when nothing else is left, and never the one a retry already tried', () => {
    expect(pickChannel([TRANSIENT_FAILURE, TRANSIENT_FAILURE], 1)).toBe(1);
    expect(pickChannel([READY, TRANSIENT_FAILURE], 0, new Set([0]))).toBe(1);
    expect(pickChannel([READY, READY], 0, new Set([0, 1]))).toBe(0);
  });
});

describe('retryOnAnother', () => {
  const failed = {
    code: status.UNAVAILABLE,
    attempts: 1,
    maxAttempts: 2,
    retrySafe: true,
    remainingMs: 5_000,
  };

  it('retries an UNAVAILABLE call that is safe to repeat, on another instance, within attempts and deadline', () => {
    expect(retryOnAnother(failed)).toBe(true);
    expect(retryOnAnother({ ...failed, attempts: 2 })).toBe(false);
    expect(retryOnAnother({ ...failed, remainingMs: 0 })).toBe(false);
  });

  it('never repeats a write without a key (the dead instance may have done it), nor an answer of the service', () => {
    expect(retryOnAnother({ ...failed, retrySafe: false })).toBe(false);
    for (const code of [status.NOT_FOUND, status.ABORTED, status.DEADLINE_EXCEEDED, status.INTERNAL]) {
      expect(retryOnAnother({ ...failed, code })).toBe(false);
    }
  });
});
