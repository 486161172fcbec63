import {
  ConflictError,
  InMemoryEphemeralChannel,
  InMemoryEventStore,
  InMemoryIdempotencyStore,
} from '@keel/core';
import { IfBusy } from '@keel/proto/keel/conversations/v1/conversations';
import type { Infrastructure } from '@keel/runtime';
import { createLogger } from '@keel/runtime';
import { describe, expect, it } from 'vitest';
import type { AgentClient, CallContext } from '../agent-client/agent.client.js';
import { IdempotencyService } from '../idempotency/idempotency.service.js';
import type { EventsFeedService } from './events-feed.service.js';
import type { FeedFrame } from './feed-frames.js';
import { TurnFeedService } from './turn-feed.service.js';

const at = '2026-01-01T00:00:00.000Z';
const tenantId = 't1';
const conversationId = 'c1';
const stream = `conversation-${conversationId}`;
const caller: CallContext = {
  tenantId,
  actor: { keyId: 'k1', role: 'editor', userId: 'bob' },
  correlationId: 'r1',
};
const started = (turnId: string) => ({
  type: 'TurnStarted',
  data: { turnId, agent: {}, role: 'editor', at },
});
const completed = (turnId: string) => ({ type: 'TurnCompleted', data: { turnId, finishReason: 'stop', at } });
const approval = (turnId: string, approvalId: string) => ({
  type: 'ApprovalRequested',
  data: { turnId, approvalId, toolCallId: `k-${approvalId}`, name: 'w', args: {}, requestedAt: at },
});
const decided = (turnId: string, approvalId: string) => ({
  type: 'ApprovalDecided',
  data: { turnId, approvalId, toolCallId: `k-${approvalId}`, decision: 'approve', by: 'bob', at },
});

/** The service over an in-memory log; the agent's SubmitMessage answers `answer`. */
const setup = (answer: () => Promise<unknown>) => {
  const store = new InMemoryEventStore();
  const ephemeral = new InMemoryEphemeralChannel();
  const calls: unknown[] = [];
  const agent = {
    call: (rpc: string, _context: CallContext, request: unknown) => {
      calls.push({ rpc, request });
      return answer();
    },
  } as unknown as AgentClient;
  const feeds = {
    sources: () => ({ store, ephemeral, pollMs: 5_000 }),
    holdKey: () => undefined,
  } as unknown as EventsFeedService;
  const infra = { idempotency: new InMemoryIdempotencyStore() } as unknown as Infrastructure;
  const idempotency = new IdempotencyService(infra, createLogger('gateway', { level: 'silent' }));
  return { store, ephemeral, calls, service: new TurnFeedService(agent, feeds, idempotency) };
};

const collect = async (frames: AsyncIterable<FeedFrame>, into: FeedFrame[]) => {
  for await (const frame of frames) into.push(frame);
};
const until = async (check: () => boolean, timeoutMs = 2_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('TurnFeedService', () => {
  it("yields that turn's frames only, from the submit version, through an approval, and ends after its terminal event", async () => {
    const { store, ephemeral, calls, service } = setup(async () => ({ turnId: 'u2', version: 2 }));
    await store.append(tenantId, stream, [started('u1'), approval('u1', 'p1')]);
    const turn = await service.sendAndStream(
      caller,
      { conversationId, content: 'hi', ifBusy: 'IF_BUSY_ENQUEUE', idempotencyKey: 'key-1' },
      new AbortController().signal,
    );
    expect(turn).toMatchObject({ turnId: 'u2', version: 2 });
    expect(calls).toEqual([
      {
        rpc: 'submitMessage',
        request: {
          request: {
            conversationId,
            content: 'hi',
            ifBusy: IfBusy.ENQUEUE,
            idempotencyKey: 'key-1',
            contextJson: '',
            userRole: '',
            replaceFrom: '',
          },
        },
      },
    ]);
    const frames: FeedFrame[] = [];
    const reading = collect(turn.frames, frames);
    // u1 still runs (u2 was queued behind it): its decision and end are not u2's.
    await store.append(tenantId, stream, [
      decided('u1', 'p1'),
      completed('u1'),
      started('u2'),
      approval('u2', 'p2'),
    ]);
    await until(() => frames.length === 2);
    ephemeral.publish(
      { kind: 'deltas', tenantId, conversationId: 'other' },
      { type: 'delta', turnId: 'u2', step: 1, seq: 1, text: 'no' },
    );
    await store.append(tenantId, stream, [decided('u2', 'p2')]);
    ephemeral.publish(
      { kind: 'deltas', tenantId, conversationId },
      { type: 'delta', turnId: 'u2', step: 1, seq: 1, text: 'Hi' },
    );
    await until(() => frames.length === 4);
    await store.append(tenantId, stream, [completed('u2'), started('u3'), completed('u3')]);
    await reading;
    expect(frames.map((f) => `${f.id} ${f.event}`)).toEqual([
      '5 turn.started',
      '6 approval.required',
      '7 approval.decided',
      '7.1 message.delta',
      '8 turn.completed',
    ]);
    expect(frames[3]!.data).toEqual({ turnId: 'u2', text: 'Hi' });
  });

  it('replays a turn that already ended from the log (a retried request), whole', async () => {
    const { store, service } = setup(async () => ({ turnId: 'never', version: 0 }));
    await store.append(tenantId, stream, [started('u1'), completed('u1')]);
    const frames: FeedFrame[] = [];
    await collect(
      service.follow(tenantId, conversationId, { turnId: 'u1', version: 0 }, new AbortController().signal),
      frames,
    );
    expect(frames.map((f) => f.event)).toEqual(['turn.started', 'turn.completed']);
  });

  it('resumes after a version (Last-Event-ID): earlier frames are skipped, their approvals still attributed', async () => {
    const { store, service } = setup(async () => ({ turnId: 'never', version: 0 }));
    await store.append(tenantId, stream, [
      started('u1'),
      approval('u1', 'p1'),
      decided('u1', 'p1'),
      completed('u1'),
    ]);
    const frames: FeedFrame[] = [];
    const turn = { turnId: 'u1', version: 0 };
    await collect(service.follow(tenantId, conversationId, turn, new AbortController().signal, 2), frames);
    expect(frames.map((f) => `${f.id} ${f.event}`)).toEqual(['3 approval.decided', '4 turn.completed']);
  });

  it('submits once per Idempotency-Key: a retry streams the first turn again (after resumeAfter), without a second submit', async () => {
    const { store, calls, service } = setup(async () => ({ turnId: 'u1', version: 0 }));
    await store.append(tenantId, stream, [
      started('u1'),
      approval('u1', 'p1'),
      decided('u1', 'p1'),
      completed('u1'),
    ]);
    const request = {
      conversationId,
      content: 'hi',
      ifBusy: 'IF_BUSY_REJECT' as const,
      idempotencyKey: 'k-1',
    };
    const first = await service.sendAndStream(caller, request, new AbortController().signal);
    expect(first).toMatchObject({ turnId: 'u1', replayed: false });
    const retry = await service.sendAndStream(
      caller,
      { ...request, resumeAfter: 2 },
      new AbortController().signal,
    );
    expect(retry).toMatchObject({ turnId: 'u1', version: 0, replayed: true });
    const frames: FeedFrame[] = [];
    await collect(retry.frames, frames);
    expect(frames.map((f) => f.event)).toEqual(['approval.decided', 'turn.completed']);
    expect(calls).toHaveLength(1);
    // The same key with other content, in the same tenant: a conflict; in another tenant: its own.
    await expect(service.submitOnce(caller, { ...request, content: 'other' })).rejects.toThrow(
      /different request body/,
    );
    const other = await service.submitOnce({ ...caller, tenantId: 't2' }, request);
    expect(other.replayed).toBe(false);
    expect(calls).toHaveLength(2);
  });

  it('frees the key when the agent refuses, so a retry submits again; refuses a malformed key', async () => {
    let refuse = true;
    const { calls, service } = setup(async () => {
      if (refuse) throw new ConflictError('busy');
      return { turnId: 'u9', version: 3 };
    });
    const request = {
      conversationId,
      content: 'hi',
      ifBusy: 'IF_BUSY_REJECT' as const,
      idempotencyKey: 'k-2',
    };
    await expect(service.submitOnce(caller, request)).rejects.toThrow('busy');
    refuse = false;
    expect(await service.submitOnce(caller, request)).toEqual({ turnId: 'u9', version: 3, replayed: false });
    expect(calls).toHaveLength(2);
    await expect(service.submitOnce(caller, { ...request, idempotencyKey: 'bad key' })).rejects.toThrow(
      expect.objectContaining({ field: 'Idempotency-Key' }),
    );
    expect(calls).toHaveLength(2);
  });

  it('rejects before any frame when the agent refuses the message', async () => {
    const { service } = setup(() => Promise.reject(new ConflictError('a turn is already running')));
    await expect(
      service.sendAndStream(
        caller,
        { conversationId, content: 'hi', ifBusy: 'IF_BUSY_REJECT' },
        new AbortController().signal,
      ),
    ).rejects.toBeInstanceOf(ConflictError);
  });

  it('stops reading when the signal aborts or the gateway shuts down, without ending the turn', async () => {
    const { store, service } = setup(async () => ({ turnId: 'u1', version: 0 }));
    const abort = new AbortController();
    const turn = await service.sendAndStream(
      caller,
      { conversationId, content: 'hi', ifBusy: 'IF_BUSY_REJECT' },
      abort.signal,
    );
    await store.append(tenantId, stream, [started('u1')]);
    const frames: FeedFrame[] = [];
    const reading = collect(turn.frames, frames);
    await until(() => frames.length === 1);
    abort.abort();
    await reading;
    const other = await service.sendAndStream(
      caller,
      { conversationId, content: 'hi', ifBusy: 'IF_BUSY_REJECT' },
      new AbortController().signal,
    );
    const more: FeedFrame[] = [];
    const second = collect(other.frames, more);
    await until(() => more.length === 1);
    service.beforeApplicationShutdown();
    await second;
    expect((await store.read(tenantId, stream)).map((e) => e.type)).toEqual(['TurnStarted']);
  });
});
