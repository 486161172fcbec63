// The sealing contract (sealing.contract.ts) on the in-memory store and key store, and the bus side.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InMemoryEventBus } from '../bus/in-memory-bus.js';
import { InMemoryEventStore } from '../event-store/in-memory-event-store.js';
import type { RecordedEvent } from '../typing/index.js';
import { DataKeyring, InMemoryDataKeyStore } from './data-keys.js';
import { ERASED_EVENT_TYPE, EventSealer, clearPartAsWritten } from './event-sealer.js';
import { describeSealingContract } from './sealing.contract.js';
import { SealingEventBus } from './sealing-decorators.js';

describeSealingContract('in memory', () =>
  Promise.resolve({ store: new InMemoryEventStore(), keys: new InMemoryDataKeyStore() }),
);

const event = (version: number, type: string, data: unknown): RecordedEvent => ({
  eventId: `00000000-0000-7000-8000-00000000000${version}`,
  type,
  data,
  metadata: {},
  tenantId: 'acme',
  streamName: 'chat-9',
  version,
  commitId: `c${version}`,
  recordedAt: '2026-01-01T00:00:00Z',
});

describe('SealingEventBus', () => {
  it('publishes sealed, hands consumers the events opened and lifted; publishing the erasure destroys the key', async () => {
    const keys = new InMemoryDataKeyStore();
    const master = randomBytes(32);
    const sealer = new EventSealer({
      keyring: new DataKeyring(keys, master),
      keyStream: ({ streamName }) => (streamName.startsWith('chat-') ? streamName : undefined),
      erasureType: 'StreamErased',
    });
    const published: RecordedEvent[] = [];
    class SpiedBus extends InMemoryEventBus {
      override publish(events: RecordedEvent[]): Promise<void> {
        published.push(...events);
        return super.publish(events);
      }
    }
    const bus = new SealingEventBus(new SpiedBus(), sealer, (e) => ({ ...e, metadata: { lifted: true } }));
    const seen: RecordedEvent[] = [];
    await bus.consume({ name: 'c' }, async ({ event: e }) => {
      seen.push(e);
    });
    await bus.publish([event(1, 'Said', { text: 'secret words', at: 'x' })]);
    await expect.poll(() => seen.length).toBe(1);
    // Publishing the erasure destroys the key (no one else did): what follows is erased.
    await bus.publish([
      event(2, 'StreamErased', { by: 'k', at: 'y' }),
      event(3, 'Said', { text: 'late words' }),
    ]);
    await expect.poll(() => seen.length).toBe(3);

    expect(JSON.stringify(published)).not.toMatch(/secret words|late words/);
    expect(seen[0]).toMatchObject({
      type: 'Said',
      data: { text: 'secret words', at: 'x' },
      metadata: { lifted: true },
    });
    expect(seen.slice(1).map((e) => e.type)).toEqual(['StreamErased', ERASED_EVENT_TYPE]);
    expect(await keys.get('acme', 'chat-9')).toHaveProperty('destroyedAt');
    await bus.close();
  });
});

describe('SealingEventBus publish of a stored commit', () => {
  it('hands events already sealed (or with nothing to seal) to the inner bus within the call; others only once sealed', async () => {
    const sealer = new EventSealer({
      keyring: new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32)),
      keyStream: ({ streamName }) => (streamName.startsWith('chat-') ? streamName : undefined),
      erasureType: 'StreamErased',
    });
    const handed: RecordedEvent[][] = [];
    class SpiedBus extends InMemoryEventBus {
      override publish(events: RecordedEvent[]): Promise<void> {
        handed.push(events);
        return super.publish(events);
      }
    }
    const bus = new SealingEventBus(new SpiedBus(), sealer);
    // A commit as the log holds it: its content sealed at append, its clear fields as they are.
    const [stored] = await sealer.seal('acme', 'chat-9', [
      { type: 'Said', data: { text: 'secret', at: 'x' } },
    ]);
    const sealed = { ...event(1, 'Said', {}), data: stored!.data };
    const clearOnly = event(2, 'Said', { at: 'y' });
    const sent = bus.publish([sealed, clearOnly]);
    // Before any await: the fast path's publish reaches the connection ahead of the appender.
    expect(handed).toEqual([[sealed, clearOnly]]);
    await sent;

    const pending = bus.publish([event(3, 'Said', { text: 'not sealed yet' })]);
    expect(handed).toHaveLength(1);
    await pending;
    expect(JSON.stringify(handed[1])).not.toMatch(/not sealed yet/);
    await bus.close();
  });
});

describe('SealingEventBus watch', () => {
  it('hands a watcher the events opened and lifted with a key held here, sealed while the key is not held', async () => {
    const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
    const sealer = new EventSealer({
      keyring,
      keyStream: ({ streamName }) => (streamName.startsWith('chat-') ? streamName : undefined),
      erasureType: 'StreamErased',
    });
    const inner = new InMemoryEventBus();
    const bus = new SealingEventBus(inner, sealer, (e) => ({ ...e, metadata: { lifted: true } }));
    const seen: RecordedEvent[] = [];
    const watching = bus.watch!({ tenantId: 'acme', streamName: 'chat-9' }, (e) => seen.push(e));
    // Sealed by another process: this one's keyring has not fetched the key yet.
    const other = new EventSealer({
      keyring: new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32)),
      keyStream: ({ streamName }) => streamName,
      erasureType: 'StreamErased',
    });
    await inner.publish(await other.sealRecorded([event(1, 'Said', { text: 'not held', at: 'x' })]));
    await bus.publish([event(2, 'Said', { text: 'held words', at: 'y' })]);
    await expect.poll(() => seen.length).toBe(2);

    expect(JSON.stringify(seen[0])).not.toMatch(/not held/);
    expect(seen[0]!.metadata).toEqual({});
    expect(seen[1]).toMatchObject({
      version: 2,
      data: { text: 'held words', at: 'y' },
      metadata: { lifted: true },
    });
    watching.unsubscribe();
    await bus.close();
  });
});

describe('sealed dead letters', () => {
  it('stores a dead-lettered (opened) event sealed; its replay reaches the consumer opened, erased once the key is gone', async () => {
    const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
    const sealer = new EventSealer({
      keyring,
      keyStream: ({ streamName }) => (streamName.startsWith('chat-') ? streamName : undefined),
      erasureType: 'StreamErased',
    });
    const inner = new InMemoryEventBus();
    const bus = new SealingEventBus(inner, sealer);
    const seen: RecordedEvent[] = [];
    await bus.consume({ name: 'hooks' }, async ({ event: e }) => {
      seen.push(e);
    });
    const said = event(1, 'Said', { text: 'secret words', at: 'x' });
    const letter = { consumer: 'hooks', tenantId: 'acme', error: 'boom', deliveryCount: 3, deadAt: 'x' };
    await bus.deadLetters.record({ ...letter, id: 'd1', event: said });
    await bus.deadLetters.record({ ...letter, id: 'd2', event: event(2, 'Said', { text: 'more words' }) });

    expect(JSON.stringify(await inner.deadLetters.list())).not.toMatch(/secret words|more words/);
    await bus.replayDeadLetter('d1');
    await expect.poll(() => seen.length).toBe(1);
    expect(seen[0]).toMatchObject({ type: 'Said', data: { text: 'secret words' } });

    await keyring.destroy('acme', 'chat-9');
    await bus.replayDeadLetter('d2');
    await expect.poll(() => seen.length).toBe(2);
    expect(seen[1]).toMatchObject({ type: ERASED_EVENT_TYPE, data: { erasedType: 'Said' } });
    await bus.close();
  });
});

describe('clearPartAsWritten', () => {
  it('reads an erased event as its type with its clear fields (a feedback keeps rating and previous), others as they are', async () => {
    const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
    const sealer = new EventSealer({
      keyring,
      keyStream: ({ streamName }) => streamName,
      erasureType: 'StreamErased',
    });
    const feedback = { messageId: 'm1', rating: 'down', previous: 'up', comment: 'secret words', at: 'x' };
    const [sealed] = await sealer.seal('acme', 'chat-9', [event(1, 'FeedbackGiven', feedback)]);
    await keyring.destroy('acme', 'chat-9');
    const erased = await sealer.open(sealed as RecordedEvent);

    expect(erased.type).toBe(ERASED_EVENT_TYPE);
    expect(clearPartAsWritten(erased)).toMatchObject({
      type: 'FeedbackGiven',
      data: { messageId: 'm1', rating: 'down', previous: 'up', at: 'x' },
    });
    expect(clearPartAsWritten(erased).data).not.toHaveProperty('comment');
    const plain = event(2, 'Said', { text: 't' });
    expect(clearPartAsWritten(plain)).toBe(plain);
  });
});
