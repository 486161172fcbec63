import { InMemoryIdempotencyStore, UnavailableError, ValidationError } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { createLogger } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { IdempotencyService } from './idempotency.service.js';

const HOUR = 60 * 60 * 1000;

const setup = () => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const store = new InMemoryIdempotencyStore(() => now);
  const infra = { idempotency: store } as unknown as Infrastructure;
  const service = new IdempotencyService(infra, createLogger('gateway', { level: 'silent' }));
  return { service, store, advance: (ms: number) => (now += ms), now: () => now };
};

const target = (key: string | undefined, body: unknown = { a: 1 }) => ({
  scope: 'tenant:t1',
  operation: 'POST /v1/x',
  key,
  body,
});

describe('IdempotencyService.once', () => {
  it('runs the work for the first request and records it; a retry gets the record, the work does not run again', async () => {
    const { service } = setup();
    let runs = 0;
    const work = async () => ({ id: `r${++runs}`, secret: 's' });
    const first = await service.once(target('k'), work, (r) => ({ id: r.id }));
    expect(first).toEqual({ replayed: false, result: { id: 'r1', secret: 's' } });
    expect(await service.once(target('k'), work, (r) => ({ id: r.id }))).toEqual({
      replayed: true,
      recorded: { id: 'r1' },
    });
    expect(runs).toBe(1);
    // Without a key every request is new work.
    await service.once(target(undefined), work);
    await service.once(target(undefined), work);
    expect(runs).toBe(3);
  });

  it('frees the key when the work fails; refuses another body (409 naming Idempotency-Key)', async () => {
    const { service } = setup();
    await expect(service.once(target('k'), () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await service.once(target('k'), async () => 'ok')).toEqual({ replayed: false, result: 'ok' });
    await expect(service.once(target('k', { a: 2 }), async () => 'again')).rejects.toThrow(
      expect.objectContaining({
        code: 'ABORTED',
        details: expect.objectContaining({ field: 'Idempotency-Key' }),
      }),
    );
  });
});

describe('IdempotencyService.once after an unknown outcome', () => {
  const unavailable = () =>
    Promise.reject(new UnavailableError('the agent service is unavailable, retry later'));
  const conflictNamingKey = expect.objectContaining({
    code: 'ABORTED',
    details: expect.objectContaining({ field: 'Idempotency-Key' }),
  });

  it('keeps the claim when the work may have been done: a retry does not run it again', async () => {
    const { service, advance } = setup();
    await expect(service.once(target('k'), unavailable)).rejects.toBeInstanceOf(UnavailableError);
    let runs = 0;
    await expect(service.once(target('k'), async () => ++runs)).rejects.toThrow(conflictNamingKey);
    // A gRPC status that says nothing of the outcome (DEADLINE_EXCEEDED) holds the claim too.
    await expect(
      service.once(target('k2'), () => Promise.reject(Object.assign(new Error('deadline'), { code: 4 }))),
    ).rejects.toThrow('deadline');
    await expect(service.once(target('k2'), async () => ++runs)).rejects.toThrow(conflictNamingKey);
    expect(runs).toBe(0);
    // The claim lapses after its pending time; a refusal (nothing done) frees the key at once.
    advance(2 * 60 * 1000);
    expect(await service.once(target('k'), async () => ++runs)).toEqual({ replayed: false, result: 1 });
    await expect(
      service.once(target('k3'), () => Promise.reject(new ValidationError('bad', { field: 'content' }))),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(await service.once(target('k3'), async () => 'ok')).toEqual({ replayed: false, result: 'ok' });
  });

  it('work deduplicated downstream: an unknown outcome frees the key and a pending retry goes through', async () => {
    const { service } = setup();
    const deduplicated = (key: string) => ({ ...target(key), deduplicated: true });
    await expect(service.once(deduplicated('k'), unavailable)).rejects.toBeInstanceOf(UnavailableError);
    // The retry reaches the service doing the work (which answers the first outcome from its log).
    expect(await service.once(deduplicated('k'), async () => 't1')).toEqual({
      replayed: false,
      result: 't1',
    });
    expect(await service.once(deduplicated('k'), async () => 't2')).toEqual({
      replayed: true,
      recorded: 't1',
    });
    // A retry while the first request is still pending (its gateway may have died) goes through too.
    let release!: (value: string) => void;
    const first = service.once(
      deduplicated('p'),
      () => new Promise<string>((resolve) => (release = resolve)),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await service.once(deduplicated('p'), async () => 'from the log')).toEqual({
      replayed: false,
      result: 'from the log',
    });
    release('first');
    expect(await first).toEqual({ replayed: false, result: 'first' });
    // Another body with the key is still refused here.
    await expect(service.once({ ...deduplicated('k'), body: { a: 2 } }, async () => 'x')).rejects.toThrow(
      conflictNamingKey,
    );
  });
});

describe('IdempotencyService.sweep', () => {
  it('deletes the entries expired for over an hour and keeps live ones', async () => {
    const { service, store, advance, now } = setup();
    await service.once(target('old'), async () => 1);
    advance(25 * HOUR);
    await service.once(target('recent'), async () => 2);
    advance(23 * HOUR);
    // `old` expired 24 h ago: swept (nothing expired is left); `recent` still answers retries.
    await service.sweep(now());
    expect(await store.purgeExpired(new Date(now()))).toBe(0);
    expect(await service.once(target('recent'), async () => 3)).toEqual({ replayed: true, recorded: 2 });
  });

  it('leaves an entry expired for less than an hour to the next sweep', async () => {
    const { service, store, advance, now } = setup();
    await service.once(target('k'), async () => 1);
    advance(24 * HOUR + 30 * 60 * 1000);
    await service.sweep(now());
    expect(await store.purgeExpired(new Date(now()))).toBe(1);
  });
});
