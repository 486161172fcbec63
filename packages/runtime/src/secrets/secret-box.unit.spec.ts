import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox(SecretBox.generateKey());

  it('seals and opens; the sealed form holds nothing of the plaintext', () => {
    const sealed = box.seal('sk-live-1234567890', 'acme/provider/openai');
    expect(JSON.stringify(sealed)).not.toContain('sk-live');
    expect(box.open(sealed, 'acme/provider/openai')).toBe('sk-live-1234567890');
    expect(box.seal('same', 'c').data).not.toBe(box.seal('same', 'c').data);
  });

  it('refuses another context, another key, or a tampered value', () => {
    const sealed = box.seal('secret', 'acme/webhook');
    expect(() => box.open(sealed, 'globex/webhook')).toThrow(ValidationError);
    expect(() => new SecretBox(SecretBox.generateKey()).open(sealed, 'acme/webhook')).toThrow(
      ValidationError,
    );
    const tampered = { ...sealed, data: Buffer.from('x').toString('base64') };
    expect(() => box.open(tampered, 'acme/webhook')).toThrow(ValidationError);
  });

  it('requires a 32-byte master key', () => {
    expect(() => new SecretBox(Buffer.alloc(16).toString('base64'))).toThrow(/32 bytes/);
  });
});
