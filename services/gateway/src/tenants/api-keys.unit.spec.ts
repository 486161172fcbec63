import { describe, expect, it } from 'vitest';
import { constantTimeEqual, generateApiKey, hashApiKey, KEY_PREFIX } from './api-keys.js';

describe('API keys', () => {
  it('are prefixed, carry 32 random bytes in base64url, and differ every time', () => {
    const keys = Array.from({ length: 100 }, generateApiKey);
    for (const key of keys) {
      expect(key.startsWith(KEY_PREFIX)).toBe(true);
      const body = key.slice(KEY_PREFIX.length);
      expect(body).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(Buffer.from(body, 'base64url')).toHaveLength(32);
    }
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('are stored as a SHA-256 hex that does not contain the key', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(hashApiKey(key));
    expect(hashApiKey(key)).not.toContain(key.slice(KEY_PREFIX.length));
  });

  it('compare equal only when equal, whatever the lengths', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', 'x')).toBe(false);
  });
});
