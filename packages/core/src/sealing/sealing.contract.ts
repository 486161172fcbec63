import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EventStore } from '../event-store/event-store.js';
import type { LogSequencer } from '../event-store/sequencing.js';
import { PreconditionError } from '../errors/index.js';
import type { DataKeyStore } from './data-keys.js';
import { DataKeyring } from './data-keys.js';
import { ERASED_EVENT_TYPE, EventSealer } from './event-sealer.js';
import { sealingStore } from './sealing-decorators.js';

/** What one run of the suite works on: a fresh raw store and a fresh key store of the adapter. */
export interface SealingFixture {
  store: EventStore & LogSequencer;
  keys: DataKeyStore;
}

const MARKER = 'zebra-marker-7f3a';
const ERASED_BY = 'StreamErased';

const sealerOf = (keys: DataKeyStore, masterKey: Buffer): EventSealer =>
  new EventSealer({
    keyring: new DataKeyring(keys, masterKey),
    keyStream: ({ streamName }) => (streamName.startsWith('chat-') ? streamName : undefined),
    erasureType: ERASED_BY,
  });

const events = [
  {
    type: 'Said',
    data: { messageId: 'm1', text: `hello ${MARKER}`, tokens: 12, at: '2026-01-01T00:00:00Z' },
  },
  { type: 'Called', data: { callId: 'c1', args: { q: MARKER }, ok: true } },
  { type: 'Counted', data: { turnId: 't1', model: 'fake:m', promptTokens: 5 } },
];

/**
 * The sealing layer over a store adapter and a data key store adapter: what the log holds of a
 * sealed stream's content is ciphertext, readers get it back, a destroyed key erases it (also for
 * a process that held the key), a wrong master key refuses to open, clear events read as they are.
 */
export const describeSealingContract = (name: string, fixture: () => Promise<SealingFixture>): void => {
  describe(`sealing layer (${name})`, () => {
    it('stores content sealed, keeps ids, times and numbers in clear, and reads the events as written', async () => {
      const { store, keys } = await fixture();
      const sealed = sealingStore(store, sealerOf(keys, randomBytes(32)));
      const appended = await sealed.append('acme', 'chat-1', events);
      expect(appended.events.map((e) => e.data)).toEqual(events.map((e) => e.data));

      const raw = await store.read('acme', 'chat-1');
      expect(JSON.stringify(raw)).not.toContain(MARKER);
      expect(raw[0]!.data).toMatchObject({ messageId: 'm1', tokens: 12, at: '2026-01-01T00:00:00Z' });
      expect(raw[2]!.data).toEqual({ turnId: 't1', model: 'fake:m', promptTokens: 5 });
      expect((await sealed.read('acme', 'chat-1')).map((e) => e.data)).toEqual(events.map((e) => e.data));
      await store.sequence();
      const page = await sealed.readAll({ scope: { tenantId: 'acme' } });
      expect(page.events.filter((e) => e.streamName === 'chat-1').map((e) => e.data)).toEqual(
        events.map((e) => e.data),
      );
    });

    it('erases a stream when its key is destroyed: content events read as erased, for every process', async () => {
      const { store, keys } = await fixture();
      const master = randomBytes(32);
      const writer = sealerOf(keys, master);
      const other = sealerOf(keys, master);
      const sealed = sealingStore(store, writer);
      const reader = sealingStore(store, other);
      await sealed.append('acme', 'chat-2', events);
      await reader.read('acme', 'chat-2'); // the other process now holds the key
      await new DataKeyring(keys, master).destroy('acme', 'chat-2');
      await sealed.append('acme', 'chat-2', [
        { type: ERASED_BY, data: { chatId: '2', by: 'k1', at: 'now' } },
      ]);

      for (const view of [sealed, reader]) {
        const read = await view.read('acme', 'chat-2');
        expect(read.map((e) => e.type)).toEqual([ERASED_EVENT_TYPE, ERASED_EVENT_TYPE, 'Counted', ERASED_BY]);
        expect(read[0]!.data).toEqual({
          messageId: 'm1',
          tokens: 12,
          at: '2026-01-01T00:00:00Z',
          erasedType: 'Said',
        });
        expect(JSON.stringify(read)).not.toContain(MARKER);
      }
      // Written after the erasure: the content is dropped, never stored.
      await sealed.append('acme', 'chat-2', [{ type: 'Said', data: { messageId: 'm9', text: MARKER } }]);
      expect(JSON.stringify(await store.read('acme', 'chat-2'))).not.toContain(MARKER);
      expect((await sealed.read('acme', 'chat-2', { fromVersion: 5 }))[0]!.type).toBe(ERASED_EVENT_TYPE);
    });

    it('seals snapshots of sealed streams; a destroyed key makes them a miss', async () => {
      const { store, keys } = await fixture();
      const master = randomBytes(32);
      const sealed = sealingStore(store, sealerOf(keys, master));
      await sealed.append('acme', 'chat-3', events);
      await sealed.snapshots.save('acme', 'chat-3', { name: 's', version: 3, state: { last: MARKER } });
      expect(JSON.stringify(await store.snapshots.load('acme', 'chat-3', 's'))).not.toContain(MARKER);
      expect((await sealed.snapshots.load('acme', 'chat-3', 's'))?.state).toEqual({ last: MARKER });
      await new DataKeyring(keys, master).destroy('acme', 'chat-3');
      const fresh = sealingStore(store, sealerOf(keys, master));
      expect(await fresh.snapshots.load('acme', 'chat-3', 's')).toBeUndefined();
    });

    it('refuses to open with another master key (a misconfigured service), naming the stream only', async () => {
      const { store, keys } = await fixture();
      await sealingStore(store, sealerOf(keys, randomBytes(32))).append('acme', 'chat-4', events);
      const wrong = sealingStore(store, sealerOf(keys, randomBytes(32)));
      const failure = await wrong.read('acme', 'chat-4').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PreconditionError);
      expect(String((failure as Error).message)).toContain('chat-4');
    });

    it('reads events written in clear before sealing (and streams it does not seal) as they are', async () => {
      const { store, keys } = await fixture();
      await store.append('acme', 'chat-5', events);
      const sealed = sealingStore(store, sealerOf(keys, randomBytes(32)));
      await sealed.append('acme', 'order-1', events);
      expect((await sealed.read('acme', 'chat-5')).map((e) => e.data)).toEqual(events.map((e) => e.data));
      expect(JSON.stringify(await store.read('acme', 'order-1'))).toContain(MARKER);
    });
  });
};
