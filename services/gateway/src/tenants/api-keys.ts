import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every tenant key starts with this, so a leaked one is recognisable (secret scanners). */
export const KEY_PREFIX = 'keel_';

/** Random bytes in a key: 256 bits. */
export const KEY_BYTES = 32;

/** A new tenant key: `keel_` + 32 random bytes in base64url. Shown once, never stored. */
export const generateApiKey = (): string => `${KEY_PREFIX}${randomBytes(KEY_BYTES).toString('base64url')}`;

/** The SHA-256 (hex) of a key: what the registry stores and looks keys up by. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

/** Compares two secrets in time independent of where they differ (both are hashed to one length first). */
export const constantTimeEqual = (a: string, b: string): boolean =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
