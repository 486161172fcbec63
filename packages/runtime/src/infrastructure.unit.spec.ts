// A process's infrastructure reads every event in its current shape: a `UsageRecorded` recorded
// before `at` existed is read, paged and delivered with the commit time as its `at`, and one
// that has `at` keeps it.
import type { RecordedEvent } from '@keel/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import type { Infrastructure } from './infrastructure.js';
import { createInfrastructure } from './infrastructure.js';
import { createLogger } from './logger.js';

const usage = (at?: string) => ({
  type: 'UsageRecorded',
  data: {
    turnId: 't1',
    step: 1,
    model: 'openai:gpt-4o',
    promptTokens: 3,
    completionTokens: 2,
    cacheReadTokens: 0,
    costUsd: null,
    ...(at === undefined ? {} : { at }),
  },
});

describe('the infrastructure store', () => {
  let infrastructure: Infrastructure;

  beforeAll(async () => {
    const config = loadConfig('audit', { LOG_LEVEL: 'silent' });
    infrastructure = await createInfrastructure(config, createLogger('test', { level: 'silent' }));
  });

  afterAll(() => infrastructure.close());

  it('lifts an old UsageRecorded on read, readAll and the bus; a current one stays as written', async () => {
    const { store, bus } = infrastructure;
    const delivered: RecordedEvent[] = [];
    await bus.consume({ name: 'upcast-test' }, async ({ event }) => void delivered.push(event));
    await store.append('acme', 'conversation-c1', [usage(), usage('2026-01-02T03:04:05.000Z')]);

    const [old, current] = await store.read('acme', 'conversation-c1');
    expect(old!.data).toMatchObject({ turnId: 't1', at: old!.recordedAt });
    expect(current!.data).toMatchObject({ at: '2026-01-02T03:04:05.000Z' });
    const page = await store.readAll({ scope: 'all-tenants' });
    expect(page.events.map((event) => (event.data as { at: string }).at)).toEqual([
      old!.recordedAt,
      '2026-01-02T03:04:05.000Z',
    ]);
    await expect.poll(() => delivered.length, { timeout: 5_000 }).toBe(2);
    expect(delivered.map((event) => (event.data as { at: string }).at)).toEqual([
      old!.recordedAt,
      '2026-01-02T03:04:05.000Z',
    ]);
  });
});
