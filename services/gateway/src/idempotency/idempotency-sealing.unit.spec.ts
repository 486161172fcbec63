// Responses kept for Idempotency-Key retries of a conversation's routes are sealed with its data
// key: deleting the conversation erases them (API.md DELETE), and a retry after it is a 404.
import {
  DataKeyring,
  EventSealer,
  InMemoryDataKeyStore,
  InMemoryIdempotencyStore,
  NotFoundError,
} from '@keel/core';
import type { ConversationErasure, Infrastructure } from '@keel/runtime';
import { createLogger } from '@keel/runtime';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { conversationOfRecord } from './idempotency-sealing.js';
import { IdempotencyService } from './idempotency.service.js';

const MARKER = 'feedback-comment-5d1e';

const setup = () => {
  const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
  const sealer = new EventSealer({ keyring, keyStream: () => undefined, erasureType: 'ConversationDeleted' });
  const stream = (id: string) => `conversation-${id}`;
  const erasure: ConversationErasure = {
    sealing: true,
    erase: (tenantId, streamName) => keyring.destroy(tenantId, streamName),
    isErased: (tenantId, streamName) => keyring.isDestroyed(tenantId, streamName),
    sealFor: (tenantId, id, purpose, value) => sealer.sealValue(tenantId, stream(id), value, purpose),
    openFor: (tenantId, id, purpose, stored) => sealer.openValue(tenantId, stream(id), stored, purpose),
  };
  const kept: unknown[] = [];
  class KeptStore extends InMemoryIdempotencyStore {
    override complete(key: string, claimId: string, response: unknown, ttlMs: number): Promise<void> {
      kept.push(response);
      return super.complete(key, claimId, response, ttlMs);
    }
  }
  const store = new KeptStore();
  const infra = { idempotency: store, erasure } as unknown as Infrastructure;
  const service = new IdempotencyService(infra, createLogger('gateway', { level: 'silent' }));
  return { service, kept, erasure };
};

describe('Idempotency-Key responses of a conversation', () => {
  it('names the conversation of a route, of a gRPC call, of a create; none for other routes', () => {
    expect(conversationOfRecord('POST /v1/conversations/c1/messages/m1/feedback', {})).toBe('c1');
    expect(conversationOfRecord('gRPC ConversationService.DecideApproval c2/a1', {})).toBe('c2');
    expect(conversationOfRecord('POST /v1/conversations', { body: { id: 'c3' } })).toBe('c3');
    expect(
      conversationOfRecord('gRPC ConversationService.CreateConversation', {
        body: { conversation: { id: 'c4' } },
      }),
    ).toBe('c4');
    expect(conversationOfRecord('POST /v1/runs', { body: { id: 'r1' } })).toBeUndefined();
  });

  it('keeps the response sealed, replays it opened; after the delete the retry is 404 and nothing runs', async () => {
    const { service, kept, erasure } = setup();
    const target = {
      scope: 'tenant:t1',
      operation: 'POST /v1/conversations/c1/messages/m1/feedback',
      key: 'k1',
      body: { rating: 'up', comment: MARKER },
    };
    let runs = 0;
    const work = async () => ({ body: { messageId: 'm1', comment: MARKER, run: ++runs } });
    await service.once(target, work);
    expect(kept).toHaveLength(1);
    expect(JSON.stringify(kept)).not.toContain(MARKER);
    expect(await service.once(target, work)).toEqual({
      replayed: true,
      recorded: { body: { messageId: 'm1', comment: MARKER, run: 1 } },
    });

    await erasure.erase('t1', 'conversation-c1');
    await expect(service.once(target, work)).rejects.toBeInstanceOf(NotFoundError);
    expect(runs).toBe(1);
  });
});
