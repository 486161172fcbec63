import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../errors/index.js';
import type { EphemeralMessage } from './ephemeral.js';
import type { EventBusUnderTest } from './event-bus.contract.js';

const WAIT = { timeout: 5_000, interval: 10 };

/** Ephemeral messages (deltas, cancel signals): every EventBus adapter must pass this too. */
export const describeEphemeralContract = (name: string, factory: () => Promise<EventBusUnderTest>): void => {
  describe(`ephemeral channel: ${name}`, () => {
    it('delivers to subscribers whose scope matches, in publish order, and never stores', async () => {
      const { bus, cleanup } = await factory();
      try {
        const conversation = 'conv 1/ü';
        const byConversation: EphemeralMessage[] = [];
        const byTenant: EphemeralMessage[] = [];
        const otherTenant: EphemeralMessage[] = [];
        const cancels: EphemeralMessage[] = [];
        const s1 = bus.ephemeral.subscribe(
          { kind: 'deltas', tenantId: 'acme', conversationId: conversation },
          (m) => byConversation.push(m),
        );
        const s2 = bus.ephemeral.subscribe({ kind: 'deltas', tenantId: 'acme' }, (m) => byTenant.push(m));
        const s3 = bus.ephemeral.subscribe({ kind: 'deltas', tenantId: 'globex' }, (m) =>
          otherTenant.push(m),
        );
        const s4 = bus.ephemeral.subscribe({ kind: 'cancel' }, (m) => cancels.push(m));
        await new Promise((r) => setTimeout(r, 50)); // let the subscriptions reach the server
        for (let seq = 1; seq <= 20; seq++) {
          bus.ephemeral.publish(
            { kind: 'deltas', tenantId: 'acme', conversationId: conversation },
            { seq, text: `t${seq}` },
          );
        }
        bus.ephemeral.publish({ kind: 'deltas', tenantId: 'acme', conversationId: 'other' }, { seq: 1 });
        bus.ephemeral.publish({ kind: 'cancel', tenantId: 'globex', conversationId: 'c9' }, { turnId: 't9' });
        await vi.waitFor(() => {
          expect(byConversation).toHaveLength(20);
          expect(byTenant).toHaveLength(21);
          expect(cancels).toHaveLength(1);
        }, WAIT);
        expect(byConversation.map((m) => (m.data as { seq: number }).seq)).toEqual(
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        expect(byConversation[0]!.topic).toEqual({
          kind: 'deltas',
          tenantId: 'acme',
          conversationId: conversation,
        });
        expect(cancels[0]).toEqual({
          topic: { kind: 'cancel', tenantId: 'globex', conversationId: 'c9' },
          data: { turnId: 't9' },
        });
        expect(otherTenant).toEqual([]);

        s1.unsubscribe();
        bus.ephemeral.publish(
          { kind: 'deltas', tenantId: 'acme', conversationId: conversation },
          { seq: 21 },
        );
        await vi.waitFor(() => expect(byTenant).toHaveLength(22), WAIT);
        expect(byConversation).toHaveLength(20);
        for (const s of [s2, s3, s4]) s.unsubscribe();
      } finally {
        await cleanup();
      }
    });

    it('keeps wildcard, dotted and blank conversation ids literal: each reaches only its own subscribers', async () => {
      const { bus, cleanup } = await factory();
      try {
        const ids = ['*', '>', 'a.b', 'a', 'a.*', ' x ', '_plain', 'b'];
        const got = new Map<string, string[]>(ids.map((id) => [id, []]));
        const subs = ids.map((id) =>
          bus.ephemeral.subscribe({ kind: 'deltas', tenantId: 'acme', conversationId: id }, (m) =>
            got.get(id)!.push(m.topic.conversationId),
          ),
        );
        await new Promise((r) => setTimeout(r, 50));
        for (const id of ids)
          bus.ephemeral.publish({ kind: 'deltas', tenantId: 'acme', conversationId: id }, {});
        await vi.waitFor(() => expect([...got.values()].every((list) => list.length >= 1)).toBe(true), WAIT);
        await new Promise((r) => setTimeout(r, 50));
        for (const id of ids) expect(got.get(id), id).toEqual([id]);
        for (const s of subs) s.unsubscribe();
      } finally {
        await cleanup();
      }
    });

    it('refuses malformed topics', async () => {
      const { bus, cleanup } = await factory();
      try {
        expect(() =>
          bus.ephemeral.publish({ kind: 'deltas', tenantId: 'a b', conversationId: 'c' }, {}),
        ).toThrow(ValidationError);
        expect(() =>
          bus.ephemeral.publish({ kind: 'nope' as never, tenantId: 'a', conversationId: 'c' }, {}),
        ).toThrow(ValidationError);
        expect(() => bus.ephemeral.subscribe({ kind: 'cancel', conversationId: 'c' }, () => {})).toThrow(
          ValidationError,
        );
      } finally {
        await cleanup();
      }
    });
  });
};
