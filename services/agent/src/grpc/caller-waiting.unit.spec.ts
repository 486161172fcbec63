// A message whose gRPC caller no longer waits (its deadline passed while the submit waited, or it
// cancelled) is not committed: the caller's status is thrown, the conversation gets nothing, the
// budget keeps no reservation, and a retry with the same Idempotency-Key starts the one turn.
// On the in-memory store; the call is grpc-js's view of it (cancelled, deadline).
import { status } from '@grpc/grpc-js';
import { InMemoryEventBus, InMemoryEventStore } from '@keel/core';
import { RpcException } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { BudgetDirectory } from '../budget/budget-directory.js';
import { TurnBudgets } from '../budget/turn-budgets.js';
import type { CallContext } from '../call-context.js';
import { ConversationService } from '../conversation/conversation.service.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { acceptedRequestOf } from './accepted-request.js';
import type { ServerCall } from './caller-waiting.js';
import { callerWaiting } from './caller-waiting.js';

const ctx: CallContext = {
  tenantId: 'acme',
  keyId: 'k1',
  role: 'editor',
  userId: 'ana',
  correlationId: 'r1',
};
const month = new Date().toISOString().slice(0, 7);

/** The test's clock: a call's deadline passes when the test moves it. */
let now = 1_000_000;
const clock = () => now;

/** A budget directory whose answer takes "a while": the clock moves by `takesMs` while it is asked. */
class SlowDirectory extends BudgetDirectory {
  takesMs = 0;
  override async monthlyUsdOf(tenantId: string): Promise<number | undefined> {
    const monthlyUsd = await super.monthlyUsdOf(tenantId);
    now += this.takesMs;
    return monthlyUsd;
  }
}

const setup = async () => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: { warn: () => {}, error: () => {} } });
  await store.append('keel', 'tenants-registry', [
    { type: 'BudgetSet', data: { tenantId: 'acme', monthlyUsd: 100, at: new Date().toISOString() } },
  ]);
  const directory = new SlowDirectory(store, { maxAgeMs: 0 });
  const config = new TenantConfigService(store);
  await config.apply(ctx, {
    type: 'PutAgent',
    agent: {
      agentId: 'support',
      model: 'openai:gpt-test',
      instructions: 'Help.',
      tools: [],
      maxSteps: 2,
      temperature: 0,
      toolResultMaxChars: 2_000,
    },
    at: 'now',
  });
  const service = new ConversationService(store, bus, config, {
    budgets: new TurnBudgets(store, directory, { reserveUsd: 0.05 }),
  });
  const { id } = await service.create(ctx, { agentId: 'support' });
  const types = async (stream: string) => (await store.read('acme', stream)).map((e) => e.type);
  return { service, directory, id, types };
};

/** A gRPC call with `deadlineInMs` left on the test's clock. */
const grpcCall = (deadlineInMs: number, cancelled = false): ServerCall => {
  const deadline = now + deadlineInMs;
  return { cancelled, getDeadline: () => deadline };
};

const statusOf = async (sent: Promise<unknown>): Promise<number | undefined> => {
  const error = await sent.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof RpcException)) throw new Error(`expected a gRPC status, got ${String(error)}`);
  return (error.getError() as { code?: number }).code;
};

const sendKey = acceptedRequestOf('SubmitMessage', 'k1', { content: 'hello', ifBusy: 'reject' });

describe('SubmitMessage whose caller no longer waits', () => {
  it('a deadline that passes while the budget is asked: DEADLINE_EXCEEDED, nothing written, the reservation given back', async () => {
    const { service, directory, id, types } = await setup();
    directory.takesMs = 10_001;
    const sent = service.send(ctx, id, { content: 'hello' }, sendKey, callerWaiting(grpcCall(10_000), clock));
    expect(await statusOf(sent)).toBe(status.DEADLINE_EXCEEDED);
    expect(await types(`conversation-${id}`)).toEqual(['ConversationCreated']);
    expect(await types(`budget-${month}`)).toEqual(['BudgetReserved', 'BudgetReleased']);

    // The client's retry (same Idempotency-Key) starts the turn, once.
    directory.takesMs = 0;
    const retried = await service.send(
      ctx,
      id,
      { content: 'hello' },
      sendKey,
      callerWaiting(grpcCall(10_000), clock),
    );
    expect(retried.version).toBe(1);
    expect(await types(`conversation-${id}`)).toEqual([
      'ConversationCreated',
      'UserMessageAdded',
      'TurnStarted',
    ]);
  });

  it('a call already past its deadline or cancelled when it arrives: nothing reserved, nothing written', async () => {
    const { service, id, types } = await setup();
    const late = service.send(ctx, id, { content: 'hello' }, undefined, callerWaiting(grpcCall(0), clock));
    expect(await statusOf(late)).toBe(status.DEADLINE_EXCEEDED);
    const cancelled = callerWaiting(grpcCall(10_000, true), clock);
    expect(await statusOf(service.send(ctx, id, { content: 'hello' }, undefined, cancelled))).toBe(
      status.CANCELLED,
    );
    expect(await types(`conversation-${id}`)).toEqual(['ConversationCreated']);
    expect(await types(`budget-${month}`)).toEqual([]);
  });

  it('a commit that would start in the last second of a 10 s deadline is refused: its answer could come too late', async () => {
    const { service, directory, id, types } = await setup();
    directory.takesMs = 9_001;
    const sent = service.send(
      ctx,
      id,
      { content: 'hello' },
      undefined,
      callerWaiting(grpcCall(10_000), clock),
    );
    expect(await statusOf(sent)).toBe(status.DEADLINE_EXCEEDED);
    expect(await types(`conversation-${id}`)).toEqual(['ConversationCreated']);
  });

  it('a call within its deadline, or no call at all (an in-process caller), is committed as before', async () => {
    const { service, directory, id, types } = await setup();
    directory.takesMs = 8_999;
    const first = await service.send(
      ctx,
      id,
      { content: 'one', ifBusy: 'enqueue' },
      undefined,
      callerWaiting(grpcCall(10_000), clock),
    );
    const second = await service.send(
      ctx,
      id,
      { content: 'two', ifBusy: 'enqueue' },
      undefined,
      callerWaiting(undefined),
    );
    expect(first.turnId).not.toBe(second.turnId);
    const written = await types(`conversation-${id}`);
    expect(written.filter((t) => t === 'UserMessageAdded')).toHaveLength(2);
  });
});
