// The audit service as a separate process on real NATS and FerretDB: usage from scripted turns
// of two tenants answered per local day in three zones exactly as a brute force over the raw
// events, each tenant seeing only its own rows; bad queries refused by field; the audit trail
// newest first with its actors and request ids and no secret; and a kill -9 in the middle of
// 10,000 usage events, after which the totals are exact (replaying the whole log again is
// covered by the projector's unit spec).
import type { EventData } from '@keel/core';
import { MongoEventStore } from '@keel/core/mongodb';
import type { AuditEntry } from '@keel/proto/keel/audit/v1/audit';
import { GroupBy } from '@keel/proto/keel/usage/v1/usage';
import type { ProcessHandle } from '@keel/testkit';
import { eventually, freePort, mongoUrlFor, startProcess, testInfra, uniqueName } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECTION_CHECKPOINT } from './projection/audit-projector.js';
import { AUDIT_COLLECTION_PREFIX } from './storage/mongo-audit-storage.js';
import { AuditGrpcClient } from './testing/audit-grpc-client.js';
import type { RawUsage } from './testing/usage-brute-force.js';
import { bruteForceUsage } from './testing/usage-brute-force.js';

/** A usage answer as gRPC carries it: every row has the feedback counts (proto3 zeros; no feedback here). */
const overGrpc = (answer: ReturnType<typeof bruteForceUsage>) => ({
  ...answer,
  rows: answer.rows.map((row) => ({ feedbackUp: 0, feedbackDown: 0, ...row })),
});

const { natsUrl } = testInfra();
const mongoUrl = mongoUrlFor(uniqueName('auditproc'));
const natsStream = uniqueName('AUDIT').toUpperCase();
const subjectPrefix = `test.${uniqueName('audit')}`;

let store: MongoEventStore;
let client: AuditGrpcClient | undefined;

/** Starts an audit process on a fresh port (a port another test run took meanwhile is not reused) and points the client at it. */
const startAudit = async (): Promise<ProcessHandle> => {
  const port = await freePort();
  client?.close();
  client = new AuditGrpcClient(`127.0.0.1:${port}`);
  return startProcess({
    name: 'audit',
    entry: 'services/audit/src/main.ts',
    env: {
      MONGODB_URL: mongoUrl,
      NATS_URL: natsUrl,
      KEEL_NATS_STREAM: natsStream,
      KEEL_SUBJECT_PREFIX: subjectPrefix,
      GRPC_PORT: String(port),
      // A delivery held by a killed process comes back after this long.
      KEEL_AUDIT_ACK_WAIT_MS: '2000',
      KEEL_OUTBOX_LEASE_MS: '1000',
      LOG_LEVEL: 'info',
    },
    readyLine: /"msg":"ready"/,
    readyTimeoutMs: 60_000,
  });
};

const editor = (userId: string) => ({ keyId: `key-${userId}`, role: 'editor', userId });
const system = { keyId: 'system:agent', role: 'admin', userId: 'system:agent' };

/** One turn as the agent logs it: the message, the start, `steps` model calls at the given instants, the end. */
const turn = (
  turnId: string,
  user: string,
  model: string,
  agentId: string,
  usage: Array<{ at: number; p: number; c: number; cost: number | null }>,
): EventData[] => [
  {
    type: 'UserMessageAdded',
    data: { messageId: `${turnId}-m`, turnId, content: 'hi', at: new Date(usage[0]!.at).toISOString() },
    metadata: { correlationId: `req-${turnId}`, actor: editor(user) },
  },
  {
    type: 'TurnStarted',
    data: { turnId, agent: { agentId, model, maxSteps: 20 }, role: 'editor', at: '' },
    metadata: { correlationId: `req-${turnId}`, actor: editor(user) },
  },
  ...usage.map((u, i) => ({
    type: 'UsageRecorded',
    data: {
      turnId,
      step: i + 1,
      model,
      promptTokens: u.p,
      completionTokens: u.c,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: u.cost,
      // The usage instant (the commit time when absent): lets one test cover many days.
      at: new Date(u.at).toISOString(),
    },
    metadata: { correlationId: `req-${turnId}`, actor: system },
  })),
  { type: 'TurnCompleted', data: { turnId, finishReason: 'stop', at: '' }, metadata: { actor: system } },
];

/** Runs `tasks` with at most `width` at once. */
const pooled = async (tasks: Array<() => Promise<unknown>>, width: number): Promise<void> => {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
};

beforeAll(async () => {
  store = await MongoEventStore.connect(mongoUrl);
});

afterAll(async () => {
  client?.close();
  await store?.db.dropDatabase().catch(() => undefined);
  await store?.close();
});

describe('the audit service process', () => {
  it('answers usage per local day, model and user as the raw events sum up, per tenant, and keeps the audit trail', async () => {
    const audit = await startAudit();
    try {
      // Two tenants, three users, two models; model calls spread over 12 days and every hour.
      const users: Record<string, string[]> = { acme: ['ann', 'bob'], globex: ['cid'] };
      const models = ['openai:gpt-4o-mini', 'anthropic:claude-3-5-haiku'];
      const start = Date.parse('2026-03-01T00:00:00Z');
      const raw: RawUsage[] = [];
      const tasks: Array<() => Promise<unknown>> = [];
      let seed = 1;
      const next = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
      for (let t = 0; t < 90; t++) {
        const tenantId = t % 3 === 2 ? 'globex' : 'acme';
        const user = users[tenantId]![t % users[tenantId]!.length]!;
        const model = models[Math.floor(next() * 2)]!;
        const at = start + Math.floor(next() * 12 * 86_400_000);
        const usage = [0, 1].map((i) => ({
          at: at + i * Math.floor(next() * 3_600_000),
          p: 100 + Math.floor(next() * 900),
          c: 10 + Math.floor(next() * 90),
          cost: i === 1 && t % 7 === 0 ? null : Math.round(next() * 1e5) / 1e7,
        }));
        usage.forEach((u, i) => raw.push({ tenantId, user, model, agent: 'support', ...u, first: i === 0 }));
        tasks.push(() =>
          store.append(tenantId, `conversation-c${t}`, turn(`turn-${t}`, user, model, 'support', usage)),
        );
      }
      await pooled(tasks, 4);

      // Configuration, keys, approvals, cancels and tool executions for the trail.
      const sealed = { v: 1, iv: 'SEALED-IV-xyz', tag: 'SEALED-TAG-xyz', data: 'SEALED-DATA-xyz' };
      const admin = { keyId: 'key-admin', role: 'admin', userId: 'ops-alice' };
      await store.append('keel', 'tenants-registry', [
        {
          type: 'KeyIssued',
          data: { tenantId: 'acme', keyId: 'key-7', role: 'admin', keyHash: 'HASH-xyz', issuedAt: '' },
          metadata: {
            correlationId: 'req-key',
            actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
          },
        },
        {
          type: 'KeyIssued',
          data: { tenantId: 'globex', keyId: 'key-8', role: 'viewer', keyHash: 'HASH-abc', issuedAt: '' },
          metadata: {
            correlationId: 'req-key2',
            actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
          },
        },
      ]);
      await store.append('acme', 'tenantconfig-acme', [
        {
          type: 'ProviderConfigured',
          data: { provider: 'openai', apiKey: sealed, at: '' },
          metadata: { correlationId: 'req-p', actor: admin },
        },
        {
          type: 'WebhookSecretRotated',
          data: { secret: sealed, at: '' },
          metadata: { correlationId: 'req-w', actor: admin },
        },
      ]);
      await store.append('acme', 'conversation-c0', [
        {
          type: 'ApprovalDecided',
          data: {
            turnId: 'turn-0',
            approvalId: 'ap-1',
            toolCallId: 'tc-1',
            decision: 'deny',
            by: 'ann',
            reason: 'no',
            at: '',
          },
          metadata: { correlationId: 'req-approve', actor: editor('ann') },
        },
      ]);
      await store.append('acme', 'conversation-c3', [
        {
          type: 'TurnCancelled',
          data: { turnId: 'turn-3', by: 'ann', withdrawnApprovals: [], at: '' },
          metadata: { correlationId: 'req-cancel', actor: editor('ann') },
        },
      ]);
      await store.append('keel', 'tenants-registry', [
        {
          type: 'KeyRevoked',
          data: { tenantId: 'acme', keyId: 'key-7', revokedAt: '' },
          metadata: {
            correlationId: 'req-revoke',
            actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
          },
        },
      ]);

      const range = { from: '2026-02-28', to: '2026-03-14' };
      await eventually(
        async () => {
          for (const tenantId of ['acme', 'globex']) {
            const answer = await client!.getUsage({ tenantId, ...range, tz: 'UTC' });
            expect(answer.totals).toEqual(
              bruteForceUsage(raw, tenantId, range.from, range.to, 'UTC', 'day').totals,
            );
          }
          expect((await client!.listAuditEntries({ tenantId: 'acme' })).data[0]).toMatchObject({
            type: 'KeyRevoked',
          });
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );

      for (const tz of ['America/Los_Angeles', 'Asia/Kolkata', 'UTC']) {
        for (const [groupBy, name] of [
          ['day', GroupBy.DAY],
          ['model', GroupBy.MODEL],
          ['user', GroupBy.USER],
        ] as const) {
          for (const tenantId of ['acme', 'globex']) {
            const answer = await client!.getUsage({ tenantId, ...range, tz, groupBy: name });
            expect(answer, `${tenantId} ${tz} ${groupBy}`).toEqual(
              overGrpc(bruteForceUsage(raw, tenantId, range.from, range.to, tz, groupBy)),
            );
          }
        }
      }
      // A sub-range cut in Kolkata (+05:30) still matches, and per-day rows differ between zones.
      const kolkata = await client!.getUsage({
        tenantId: 'acme',
        from: '2026-03-03',
        to: '2026-03-05',
        tz: 'Asia/Kolkata',
        groupBy: GroupBy.USER,
      });
      expect(kolkata).toEqual(
        overGrpc(bruteForceUsage(raw, 'acme', '2026-03-03', '2026-03-05', 'Asia/Kolkata', 'user')),
      );
      const la = await client!.getUsage({ tenantId: 'acme', ...range, tz: 'America/Los_Angeles' });
      const utc = await client!.getUsage({ tenantId: 'acme', ...range, tz: 'UTC' });
      expect(la.rows).not.toEqual(utc.rows);

      // Each tenant sees its own users only.
      const acmeUsers = await client!.getUsage({ tenantId: 'acme', ...range, groupBy: GroupBy.USER });
      const globexUsers = await client!.getUsage({ tenantId: 'globex', ...range, groupBy: GroupBy.USER });
      expect(acmeUsers.rows.map((r) => r.key)).toEqual(['ann', 'bob']);
      expect(globexUsers.rows.map((r) => r.key)).toEqual(['cid']);

      // Bad input: INVALID_ARGUMENT, the field named first.
      const refused = async (request: Parameters<AuditGrpcClient['getUsage']>[0]) =>
        client!.getUsage(request).then(
          () => 'accepted',
          (e: { code: number; details: string }) => `${e.code} ${e.details}`,
        );
      expect(await refused({ tenantId: 'acme', ...range, tz: 'Nowhere/Atlantis' })).toMatch(/^3 tz /);
      expect(await refused({ tenantId: 'acme', from: '2026-03-02', to: '2026-03-01' })).toMatch(/^3 from /);
      expect(await refused({ tenantId: 'acme', from: '2016-01-01', to: '2026-01-01' })).toMatch(/^3 to /);
      expect(await refused({ tenantId: 'acme', from: '2026-13-01', to: '2026-03-01' })).toMatch(/^3 from /);

      // The trail: newest first, who/what/when/request id, paged by an opaque cursor, no secret.
      const pages: AuditEntry[] = [];
      let cursor = '';
      do {
        const page = await client!.listAuditEntries({ tenantId: 'acme', limit: 2, cursor });
        pages.push(...page.data);
        cursor = page.nextCursor;
      } while (cursor);
      // Every scripted turn's end is in the trail too; the other entries in order below.
      const ended = pages.filter((e) => e.type === 'TurnCompleted');
      expect(ended.length).toBeGreaterThan(0);
      expect(ended[0]).toMatchObject({
        target: expect.stringMatching(/^turn:/),
        details: { finishReason: 'stop' },
      });
      const trail = pages.filter((e) => e.type !== 'TurnCompleted');
      expect(trail.map((e) => e.type)).toEqual([
        'KeyRevoked',
        'TurnCancelled',
        'ApprovalDecided',
        'WebhookSecretRotated',
        'ProviderConfigured',
        'KeyIssued',
      ]);
      expect(trail[0]).toMatchObject({
        target: 'key:key-7',
        actor: { keyId: 'operator', role: 'operator', userId: 'operator' },
        requestId: 'req-revoke',
      });
      expect(trail[2]).toMatchObject({
        target: 'approval:ap-1',
        actor: { keyId: 'key-ann', role: 'editor', userId: 'ann' },
        requestId: 'req-approve',
        conversationId: 'c0',
        details: { decision: 'deny', reason: 'no', toolCallId: 'tc-1', turnId: 'turn-0' },
      });
      expect(trail[4]).toMatchObject({ target: 'provider:openai', details: { apiKeySet: 'true' } });
      expect(JSON.stringify(pages)).not.toMatch(/SEALED|HASH/);
      const times = pages.map((e) => String(e.at));
      expect([...times].sort().reverse()).toEqual(times);
      expect((await client!.listAuditEntries({ tenantId: 'acme', type: 'KeyIssued' })).data).toHaveLength(1);
      const globex = (await client!.listAuditEntries({ tenantId: 'globex' })).data;
      expect(globex.filter((e) => e.type !== 'TurnCompleted').map((e) => e.target)).toEqual(['key:key-8']);
      await expect(
        client!.listAuditEntries({ tenantId: 'acme', cursor: 'not-a-cursor!' }),
      ).rejects.toMatchObject({
        code: 3,
      });
    } finally {
      await audit.kill('SIGTERM');
    }
  });

  it('has exact totals after a kill -9 in the middle of 10,000 usage events', async () => {
    const tenantId = 'bulk';
    const turns = 1000;
    const steps = 10;
    const expected = { promptTokens: 0, completionTokens: 0, costUsd: 0, turns };
    let costNanos = 0;
    const tasks: Array<() => Promise<unknown>> = [];
    const base = Date.parse('2026-04-10T00:00:00Z');
    // 100 conversations of 10 turns of 10 model calls: 10,000 usage events in 100 commits.
    for (let c = 0; c < 100; c++) {
      const events: EventData[] = [];
      for (let k = 0; k < 10; k++) {
        const t = c * 10 + k;
        const usage = Array.from({ length: steps }, (_, s) => ({
          at: base + t * 60_000 + s * 1000,
          p: 1 + ((t * 31 + s * 7) % 997),
          c: 1 + ((t * 17 + s * 3) % 101),
          cost: ((t + s) % 13) / 1e6,
        }));
        for (const u of usage) {
          expected.promptTokens += u.p;
          expected.completionTokens += u.c;
          costNanos += Math.round(u.cost * 1e9);
        }
        events.push(...turn(`bulk-${t}`, `user-${t % 3}`, 'openai:gpt-4o', 'bulk-agent', usage));
      }
      tasks.push(() => store.append(tenantId, `conversation-bulk-${c}`, events));
    }
    expected.costUsd = costNanos / 1e9;
    const query = { tenantId, from: '2026-04-09', to: '2026-04-12', tz: 'America/Los_Angeles' };
    const checkpoint = () =>
      store.db
        .collection<{ _id: string; position: number }>(`${AUDIT_COLLECTION_PREFIX}checkpoints`)
        .findOne({ _id: PROJECTION_CHECKPOINT })
        .then((doc) => doc?.position ?? 0);

    let audit = await startAudit();
    const before = await checkpoint();
    const appending = pooled(tasks, 1);
    // Kill it while it is projecting: after it moved past what the first test left, before the end.
    await eventually(async () => expect(await checkpoint()).toBeGreaterThan(before + 500), {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    expect(await audit.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await appending;
    const partial = await checkpoint();

    audit = await startAudit();
    try {
      await eventually(
        async () => {
          expect((await client!.getUsage(query)).totals).toEqual(expected);
          // The delivery the killed process held came back and the projection moved on.
          expect(await checkpoint()).toBeGreaterThan(partial);
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      // Nothing arrives late and counts twice.
      await new Promise((r) => setTimeout(r, 3_000));
      expect((await client!.getUsage(query)).totals).toEqual(expected);
      const byUser = await client!.getUsage({ ...query, groupBy: GroupBy.USER });
      expect(byUser.rows.map((r) => [r.key, r.turns])).toEqual([
        ['user-0', 334],
        ['user-1', 333],
        ['user-2', 333],
      ]);
    } finally {
      await audit.kill('SIGTERM');
    }
  }, 300_000);
});
