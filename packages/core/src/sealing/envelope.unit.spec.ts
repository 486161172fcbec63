import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SealedContent } from './envelope.js';
import { openText, sealText, secretKeyOf } from './envelope.js';

type Sealed = Extract<SealedContent, { v: 1 }>;

describe('envelope: AES-256-GCM under a data key', () => {
  it('makes one KeyObject per key buffer, holding that buffer’s key', () => {
    const key = randomBytes(32);
    const other = Buffer.from(key);
    expect(secretKeyOf(key)).toBe(secretKeyOf(key));
    expect(secretKeyOf(other)).not.toBe(secretKeyOf(key));
    expect(secretKeyOf(key).export().equals(key)).toBe(true);
  });

  it('opens what a cipher given the raw key sealed, and the other way round (the format is unchanged)', () => {
    const key = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from('event|acme|chat-1|Said', 'utf8'));
    const data = Buffer.concat([cipher.update('{"text":"hi"}', 'utf8'), cipher.final()]);
    const sealed: Sealed = {
      v: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
    expect(openText(key, sealed, 'event|acme|chat-1|Said')).toBe('{"text":"hi"}');
    const again = sealText(Buffer.from(key), 'réponse 😀', 'ctx') as Sealed;
    expect(openText(key, again, 'ctx')).toBe('réponse 😀');
    expect(() => openText(randomBytes(32), again, 'ctx')).toThrow();
    expect(() => openText(key, again, 'other')).toThrow();
  });
});
