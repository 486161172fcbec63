import { describe, expect, it } from 'vitest';
import { backoffDelayMs, sleep } from './backoff.js';

const policy = { baseDelayMs: 100, maxDelayMs: 1000 };

describe('backoffDelayMs', () => {
  it('doubles the cap per attempt up to the maximum, with full jitter below it', () => {
    expect([1, 2, 3, 4, 5, 30].map((attempt) => backoffDelayMs(attempt, policy, () => 0.999999))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(200);
  });

  it('spreads real draws over the whole range', () => {
    const draws = Array.from({ length: 2000 }, () => backoffDelayMs(4, policy));
    expect(Math.min(...draws)).toBeLessThan(80);
    expect(Math.max(...draws)).toBeGreaterThan(720);
    expect(draws.every((d) => d >= 0 && d < 800)).toBe(true);
  });
});

describe('sleep', () => {
  it('waits, and rejects with the reason as soon as the signal aborts', async () => {
    const started = performance.now();
    await sleep(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(28);
    const controller = new AbortController();
    const pending = sleep(10_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    await expect(sleep(10, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});
