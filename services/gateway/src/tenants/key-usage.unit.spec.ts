import type { CheckpointStore } from '@keel/core';
import { InMemoryCheckpointStore } from '@keel/core';
import { createLogger } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import { KEY_USE_RESOLUTION_MS, KeyUsage } from './key-usage.js';

const silent = createLogger('gateway', { level: 'silent' });
const T0 = Date.parse('2026-11-23T10:00:00.000Z');

/** A checkpoint store counting its writes. */
const counting = (): CheckpointStore & { saves: number } => {
  const inner = new InMemoryCheckpointStore();
  const store = {
    saves: 0,
    load: (name: string) => inner.load(name),
    save: async (name: string, position: number) => {
      store.saves += 1;
      await inner.save(name, position);
    },
  };
  return store;
};

describe('KeyUsage', () => {
  it('answers null for a key never used, and the time of its use once used', async () => {
    let now = T0;
    const usage = new KeyUsage({ checkpoints: new InMemoryCheckpointStore() }, silent, () => now);
    expect(await usage.lastUsed(['k1'])).toEqual(new Map([['k1', null]]));
    await usage.recordUse('k1');
    now += 5_000;
    expect(await usage.lastUsed(['k1', 'k2'])).toEqual(
      new Map([
        ['k1', '2026-11-23T10:00:00.000Z'],
        ['k2', null],
      ]),
    );
  });

  it('writes a key at most once per minute per process, and never moves its time back', async () => {
    const checkpoints = counting();
    let now = T0;
    const usage = new KeyUsage({ checkpoints }, silent, () => now);
    for (let i = 0; i < 50; i += 1) await usage.recordUse('k1');
    expect(checkpoints.saves).toBe(1);
    now += KEY_USE_RESOLUTION_MS;
    await usage.recordUse('k1');
    expect(checkpoints.saves).toBe(2);
    // Another gateway whose clock or write lags: the later time stays.
    await new KeyUsage({ checkpoints }, silent, () => T0 + 1).recordUse('k1');
    expect((await usage.lastUsed(['k1'])).get('k1')).toBe(new Date(T0 + KEY_USE_RESOLUTION_MS).toISOString());
  });

  it('never fails the request when the write fails, and tries again on the next use', async () => {
    let fail = true;
    const inner = new InMemoryCheckpointStore();
    const checkpoints: CheckpointStore = {
      load: (name) => inner.load(name),
      save: async (name, position) => {
        if (fail) throw new Error('store down');
        await inner.save(name, position);
      },
    };
    const usage = new KeyUsage({ checkpoints }, silent, () => T0);
    await expect(usage.recordUse('k1')).resolves.toBeUndefined();
    fail = false;
    await usage.recordUse('k1');
    expect((await usage.lastUsed(['k1'])).get('k1')).toBe(new Date(T0).toISOString());
  });
});
