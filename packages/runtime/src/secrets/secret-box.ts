import type { KeyObject } from 'node:crypto';
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';
import { ValidationError } from '@keel/core';
import type { SealedSecret } from '@keel/events';

/**
 * Seals secrets (provider API keys, webhook secrets) with AES-256-GCM under the 32-byte master
 * key from KEEL_MASTER_KEY. The additional data binds a sealed secret to its tenant and purpose,
 * so a sealed value copied to another tenant or field does not open.
 */
export class SecretBox {
  /** A KeyObject: a cipher given a Buffer key spends about 40 us on Node 24 checking what it is. */
  private readonly key: KeyObject;

  constructor(masterKeyBase64: string) {
    const key = Buffer.from(masterKeyBase64, 'base64');
    if (key.length !== 32) {
      throw new ValidationError('KEEL_MASTER_KEY must be 32 bytes, base64-encoded', {
        field: 'KEEL_MASTER_KEY',
      });
    }
    this.key = createSecretKey(key);
  }

  /** A fresh random master key, base64 (for dev mode and `.env` generation). */
  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  seal(plaintext: string, context: string): SealedSecret {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return {
      v: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
  }

  open(sealed: SealedSecret, context: string): string {
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString(
        'utf8',
      );
    } catch (error) {
      // Never echo the sealed value or the key: the reason is enough.
      throw new ValidationError('a sealed secret does not open with this master key and context', {
        cause: error,
      });
    }
  }
}
