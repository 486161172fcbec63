import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { InMemoryEventBus } from '../bus/in-memory-bus.js';
import type { RecordedEvent } from '../typing/index.js';
import { DataKeyring, InMemoryDataKeyStore } from './data-keys.js';
import type * as Envelope from './envelope.js';
import type { SealedContent } from './envelope.js';
import { openText, sealText } from './envelope.js';
import { ERASED_EVENT_TYPE, EventSealer } from './event-sealer.js';
import { OpenedContents } from './opened-contents.js';
import { SealingEventBus } from './sealing-decorators.js';

type Sealed = Extract<SealedContent, { v: 1 }>;

// Every decryption of the sealer counted (the real one runs).
const decryptions = vi.hoisted(() => ({ count: 0 }));
vi.mock('./envelope.js', async (importOriginal) => {
  const actual = await importOriginal<typeof Envelope>();
  return {
    ...actual,
    openText: (...args: Parameters<typeof actual.openText>) => {
      decryptions.count++;
      return actual.openText(...args);
    },
  };
});

describe('OpenedContents', () => {
  const key = randomBytes(32);
  const sealed = sealText(key, '{"text":"hello"}', 'ctx') as Sealed;

  it('decrypts a content once, then answers it for the same ciphertext, context and key', () => {
    const contents = new OpenedContents();
    let decrypted = 0;
    const open = (k: Buffer, s: Sealed, context: string) =>
      contents.open(k, s, context, () => {
        decrypted++;
        return openText(k, s, context);
      });
    expect(open(key, sealed, 'ctx')).toBe('{"text":"hello"}');
    // Another copy of the same ciphertext (another delivery, a read) and of the key.
    expect(open(Buffer.from(key), { ...sealed }, 'ctx')).toBe('{"text":"hello"}');
    expect(decrypted).toBe(1);
  });

  it('decrypts again for another context, key or data under the same iv and tag (which then fail)', () => {
    const contents = new OpenedContents();
    const open = (k: Buffer, s: Sealed, context: string) =>
      contents.open(k, s, context, () => openText(k, s, context));
    expect(open(key, sealed, 'ctx')).toBe('{"text":"hello"}');
    expect(() => open(key, sealed, 'other ctx')).toThrow();
    expect(() => open(randomBytes(32), sealed, 'ctx')).toThrow();
    const forged = { ...sealed, data: Buffer.from('{"text":"forged"}').toString('base64') };
    expect(() => open(key, forged, 'ctx')).toThrow();
    // A failure is not remembered: the original still opens, the forgery still fails.
    expect(open(key, sealed, 'ctx')).toBe('{"text":"hello"}');
    expect(() => open(key, forged, 'ctx')).toThrow();
  });

  it('keeps at most its number of entries and units, the oldest dropped first', () => {
    const contents = new OpenedContents(3, 1_000);
    const many = Array.from({ length: 5 }, (_, i) => sealText(key, `{"n":${i}}`, 'ctx') as Sealed);
    for (const s of many) contents.open(key, s, 'ctx', () => openText(key, s, 'ctx'));
    expect(contents.size).toBe(3);
    let decrypted = 0;
    const counted = (s: Sealed) =>
      contents.open(key, s, 'ctx', () => {
        decrypted++;
        return openText(key, s, 'ctx');
      });
    counted(many[4]!);
    counted(many[2]!);
    expect(decrypted).toBe(0);
    counted(many[0]!);
    expect(decrypted).toBe(1);
    const big = sealText(key, JSON.stringify({ text: 'x'.repeat(600) }), 'ctx') as Sealed;
    counted(big);
    expect(contents.size).toBeLessThanOrEqual(2);
  });
});

describe('EventSealer: an event opened by each of several consumers', () => {
  const event = (version: number, data: unknown): RecordedEvent => ({
    eventId: `00000000-0000-7000-8000-00000000000${version}`,
    type: 'Said',
    data,
    metadata: {},
    tenantId: 'acme',
    streamName: 'chat-9',
    version,
    commitId: `c${version}`,
    recordedAt: '2026-01-01T00:00:00Z',
  });

  it('is decrypted once for every consumer and a read, each gets its own copy; once the key is destroyed it reads as erased', async () => {
    const keyring = new DataKeyring(new InMemoryDataKeyStore(), randomBytes(32));
    const sealer = new EventSealer({
      keyring,
      keyStream: ({ streamName }) => streamName,
      erasureType: 'StreamErased',
    });
    const [sealed] = await sealer.sealRecorded([event(1, { text: 'secret words', at: 'x' })]);
    // The data key is open already (sealing opened it): from here on, event contents only.
    const before = decryptions.count;
    const bus = new SealingEventBus(new InMemoryEventBus(), sealer);
    const seen: RecordedEvent[][] = [[], [], []];
    for (const [i, list] of seen.entries())
      await bus.consume({ name: `c${i}` }, async ({ event: e }) => {
        list.push(e);
      });
    await bus.inner.publish([sealed!]);
    await expect.poll(() => seen.every((list) => list.length === 1)).toBe(true);
    for (const [list] of seen) expect(list!.data).toEqual({ text: 'secret words', at: 'x' });
    expect(seen[0]![0]!.data).not.toBe(seen[1]![0]!.data);
    expect(decryptions.count - before).toBe(1);
    const decrypted = decryptions.count;
    expect((await sealer.openAll([sealed!]))[0]!.data).toEqual({ text: 'secret words', at: 'x' });
    expect(sealer.openHeld([sealed!])?.[0]!.data).toEqual({ text: 'secret words', at: 'x' });
    expect(decryptions.count - decrypted).toBe(0);

    await keyring.destroy('acme', 'chat-9');
    const again = await sealer.open(sealed!);
    expect(again.type).toBe(ERASED_EVENT_TYPE);
    expect(JSON.stringify(again)).not.toMatch(/secret words/);
  });
});
