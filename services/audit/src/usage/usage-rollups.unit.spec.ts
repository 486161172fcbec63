// Property test: usage answered from the rollups equals a brute-force sum over the raw usage
// events, for random data, random ranges, every grouping and zones with whole, half- and
// quarter-hour offsets and DST days; pages applied twice or in other splits change nothing.
import type { RecordedEvent } from '@keel/core';
import { InMemoryEventStore } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { AuditProjector } from '../projection/audit-projector.js';
import { InMemoryAuditStorage } from '../storage/in-memory-audit-storage.js';
import type { RawUsage } from '../testing/usage-brute-force.js';
import { answerUsageAcross } from './usage-across.js';
import { bruteForceUsage } from '../testing/usage-brute-force.js';
import { localDateOf, nextDate } from './time-zones.js';
import { checkUsageQuery } from './usage-request.js';
import { answerUsage } from './usage-query.js';

const ZONES = ['UTC', 'America/Los_Angeles', 'Asia/Kolkata', 'Asia/Kathmandu', 'Europe/Berlin'];
const TENANTS: readonly string[] = ['acme', 'globex'];
const USERS = ['u-1', 'u-2', 'u.3$', 'constructor', '__proto__', 'toString'];
const MODELS = ['openai:gpt-4o-mini', 'anthropic:claude-3-5-haiku'];
const START = Date.parse('2026-02-25T00:00:00Z'); // spans the LA DST change of 2026-03-08
const SPAN_MS = 20 * 86_400_000;

/** A seeded PRNG (mulberry32), so a failure can be replayed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** Scripted turns as log events: the user's message, the turn start, 1–3 model calls, the end. */
const scriptedLog = (seed: number, turns: number): { events: RecordedEvent[]; raw: RawUsage[] } => {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const events: RecordedEvent[] = [];
  const raw: RawUsage[] = [];
  let position = 0;
  const push = (
    tenantId: string,
    stream: string,
    version: number,
    type: string,
    data: object,
    actor: object,
    at: number,
  ) => {
    position++;
    events.push({
      eventId: `e${position}`,
      type,
      data,
      metadata: { correlationId: `r${position}`, actor },
      tenantId,
      streamName: stream,
      version,
      globalPosition: position,
      commitId: `c${position}`,
      recordedAt: new Date(at).toISOString(),
    });
  };
  for (let t = 0; t < turns; t++) {
    const tenantId = pick(TENANTS);
    const user = pick(USERS);
    const model = pick(MODELS);
    const agent = pick(['a1', 'a2']);
    const stream = `conversation-c${t}`;
    const turnId = `turn-${t}`;
    const system = { keyId: 'system:agent', role: 'admin', userId: 'system:agent' };
    let at = START + Math.floor(rnd() * SPAN_MS);
    push(
      tenantId,
      stream,
      1,
      'UserMessageAdded',
      { turnId, messageId: 'm', content: 'hi', at: '' },
      { keyId: 'k1', role: 'editor', userId: user },
      at,
    );
    push(
      tenantId,
      stream,
      2,
      'TurnStarted',
      { turnId, agent: { agentId: agent, model, maxSteps: 8 } },
      { keyId: 'k1', role: 'editor', userId: user },
      at,
    );
    const steps = 1 + Math.floor(rnd() * 3);
    for (let step = 1; step <= steps; step++) {
      at += Math.floor(rnd() * 40 * 60_000); // steps may cross bucket, day and DST boundaries
      const usage = {
        p: Math.floor(rnd() * 5000),
        c: Math.floor(rnd() * 900),
        cost: rnd() < 0.1 ? null : Math.round(rnd() * 1e6) / 1e8,
      };
      push(
        tenantId,
        stream,
        2 + step,
        'UsageRecorded',
        {
          turnId,
          step,
          model,
          promptTokens: usage.p,
          completionTokens: usage.c,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          costUsd: usage.cost,
          at: new Date(at).toISOString(),
        },
        system,
        at,
      );
      raw.push({ tenantId, at, user, model, agent, ...usage, first: step === 1 });
    }
    push(tenantId, stream, 3 + steps, 'TurnCompleted', { turnId, finishReason: 'stop', at: '' }, system, at);
  }
  // The log's global order is commit order: sort by time, keep positions increasing.
  events.sort(
    (a, b) => Date.parse(a.recordedAt) - Date.parse(b.recordedAt) || a.globalPosition! - b.globalPosition!,
  );
  events.forEach((e, i) => (e.globalPosition = i + 1));
  return { events, raw };
};

const project = async (events: RecordedEvent[], pageSizes: number[]): Promise<InMemoryAuditStorage> => {
  const storage = new InMemoryAuditStorage();
  const projector = new AuditProjector(new InMemoryEventStore(), storage);
  let i = 0;
  let n = 0;
  while (i < events.length) {
    const size = pageSizes[n++ % pageSizes.length]!;
    const page = events.slice(i, i + size);
    await projector.applyPage(page, page[page.length - 1]!.globalPosition!);
    i += size;
  }
  return storage;
};

describe('usage rollups', () => {
  it('answer every zone, range and grouping exactly as a brute-force sum of the raw usage events', async () => {
    const { events, raw } = scriptedLog(42, 1500);
    const storage = await project(events, [97]);
    const rnd = random(7);
    let checked = 0;
    for (const tz of ZONES) {
      for (let i = 0; i < 12; i++) {
        const a = localDateOf(START + Math.floor(rnd() * SPAN_MS), 'UTC');
        const b = localDateOf(START + Math.floor(rnd() * SPAN_MS), 'UTC');
        const [from, to] = a <= b ? [a, b] : [b, a];
        for (const groupBy of ['day', 'model', 'user', 'agent'] as const) {
          for (const tenantId of TENANTS) {
            const answer = await answerUsage(storage, checkUsageQuery({ tenantId, from, to, tz, groupBy }));
            expect(answer, `${tenantId} ${from}..${to} ${tz} by ${groupBy}`).toEqual(
              bruteForceUsage(raw, tenantId, from, to, tz, groupBy),
            );
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(ZONES.length * 12 * 4 * 2);
    // The whole span: the totals are all of the tenant's usage.
    const all = await answerUsage(
      storage,
      checkUsageQuery({ tenantId: 'acme', from: '2026-02-20', to: '2026-03-31', tz: 'Asia/Kathmandu' }),
    );
    const acme = raw.filter((u) => u.tenantId === 'acme');
    expect(all.totals.promptTokens).toBe(acme.reduce((s, u) => s + u.p, 0));
    expect(all.totals.turns).toBe(acme.filter((u) => u.first).length);
  }, 60_000);

  it('reads several tenants as one: by tenant and merged by any grouping, as the brute-force sum', async () => {
    const { events, raw } = scriptedLog(11, 600);
    const storage = await project(events, [250]);
    for (const groupBy of ['tenant', 'day', 'model', 'user', 'agent'] as const) {
      for (const tz of ['UTC', 'America/Los_Angeles', 'Asia/Kathmandu']) {
        const answer = await answerUsageAcross(storage, TENANTS, {
          from: '2026-02-25',
          to: '2026-03-18',
          tz,
          groupBy,
        });
        expect(answer, `${tz} by ${groupBy}`).toEqual(
          bruteForceUsage(raw, TENANTS, '2026-02-25', '2026-03-18', tz, groupBy),
        );
      }
    }
    const byTenant = await answerUsageAcross(storage, [...TENANTS, 'no-usage'], {
      from: '2026-02-20',
      to: '2026-03-31',
      tz: 'UTC',
      groupBy: 'tenant',
    });
    expect(byTenant.rows.map((row) => row.key)).toEqual([...TENANTS].sort());
  });

  it('cuts the DST days of Los Angeles at their own midnights (23 and 25 hours)', async () => {
    const { events, raw } = scriptedLog(9, 800);
    const storage = await project(events, [500]);
    for (const groupBy of ['day', 'user'] as const) {
      const answer = await answerUsage(
        storage,
        checkUsageQuery({
          tenantId: 'globex',
          from: '2026-03-07',
          to: '2026-03-09',
          tz: 'America/Los_Angeles',
          groupBy,
        }),
      );
      expect(answer).toEqual(
        bruteForceUsage(raw, 'globex', '2026-03-07', '2026-03-09', 'America/Los_Angeles', groupBy),
      );
    }
  });

  it('gives the same numbers whatever the page split, and when every page is applied twice', async () => {
    const { events } = scriptedLog(3, 400);
    const once = await project(events, [1000]);
    const query = checkUsageQuery({
      tenantId: 'acme',
      from: '2026-02-24',
      to: '2026-03-20',
      tz: 'Asia/Kolkata',
      groupBy: 'user',
    });
    const expected = await answerUsage(once, query);
    expect(expected.totals.turns).toBeGreaterThan(0);

    const split = await project(events, [1, 7, 64, 3]);
    expect(await answerUsage(split, query)).toEqual(expected);

    // Replaying: every page again (as after a crash between the writes and the checkpoint), then the whole log again.
    // The cost per tenant (the metric's feed) counts each model call once all the same.
    const costs = new Map<string, number>();
    const onCost = (tenantId: string, costUsd: number) =>
      costs.set(tenantId, (costs.get(tenantId) ?? 0) + Math.round(costUsd * 1e9));
    const storage = new InMemoryAuditStorage();
    const projector = new AuditProjector(new InMemoryEventStore(), storage, { onCost });
    for (let i = 0; i < events.length; i += 50) {
      const page = events.slice(i, i + 50);
      await projector.applyPage(page, page[page.length - 1]!.globalPosition!);
      await projector.applyPage(page, page[page.length - 1]!.globalPosition!);
    }
    await projector.applyPage(events, events.length);
    const fresh = new AuditProjector(new InMemoryEventStore(), storage, { onCost }); // a restarted process: no cache
    await fresh.applyPage(events, events.length);
    expect(await answerUsage(storage, query)).toEqual(expected);
    const all = { from: '2026-02-20', to: '2026-03-31', tz: 'UTC' };
    for (const tenantId of TENANTS) {
      const answer = await answerUsage(storage, checkUsageQuery({ tenantId, ...all }));
      expect((costs.get(tenantId) ?? 0) / 1e9, tenantId).toBeCloseTo(answer.totals.costUsd, 9);
    }
  });

  it('keeps each tenant to its own rows', async () => {
    const { events } = scriptedLog(5, 300);
    const storage = await project(events, [100]);
    const query = { from: '2026-02-20', to: '2026-03-31', tz: 'UTC', groupBy: 'user' } as const;
    const acme = await answerUsage(storage, checkUsageQuery({ tenantId: 'acme', ...query }));
    const globex = await answerUsage(storage, checkUsageQuery({ tenantId: 'globex', ...query }));
    const nobody = await answerUsage(storage, checkUsageQuery({ tenantId: 'initech', ...query }));
    expect(acme.totals.promptTokens + globex.totals.promptTokens).toBe(
      events
        .filter((e) => e.type === 'UsageRecorded')
        .reduce((s, e) => s + (e.data as { promptTokens: number }).promptTokens, 0),
    );
    expect(nobody).toEqual({
      totals: { promptTokens: 0, completionTokens: 0, costUsd: 0, turns: 0 },
      rows: [],
    });
  });
});

describe('usage query checks', () => {
  const base = { tenantId: 'acme', from: '2026-01-01', to: '2026-01-31' };
  it.each([
    [{ tz: 'Mars/Olympus_Mons' }, /^tz /],
    [{ from: '2026-02-01' }, /^from must not be after to/],
    [{ from: '2016-01-01' }, /^to the range covers 3684 days/],
    [{ groupBy: 'week' }, /^groupBy must be day, model, user or agent/],
    [{ from: '2026-02-30' }, /^from is not a calendar date/],
    [{ to: '26-01-31' }, /^to must be a date YYYY-MM-DD/],
  ])('refuses %o naming the field', (change, message) => {
    expect(() => checkUsageQuery({ ...base, ...change })).toThrow(message);
  });

  it('accepts a full leap year and defaults to UTC by day', () => {
    expect(checkUsageQuery({ ...base, from: '2028-01-01', to: '2028-12-31' })).toEqual({
      tenantId: 'acme',
      from: '2028-01-01',
      to: '2028-12-31',
      tz: 'UTC',
      groupBy: 'day',
    });
  });
});

describe('date helpers', () => {
  it('steps over month and year ends', () => {
    expect(nextDate('2026-12-31')).toBe('2027-01-01');
    expect(nextDate('2028-02-28')).toBe('2028-02-29');
  });
});
