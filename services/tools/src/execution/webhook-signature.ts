import { createHmac, timingSafeEqual } from 'node:crypto';

const PREFIX = 'sha256=';
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

/** The `X-Keel-Signature` value for `body`: `sha256=<hex HMAC-SHA256 of the exact body bytes>`. */
export const signBody = (secret: string, body: string | Uint8Array): string =>
  PREFIX + createHmac('sha256', secret).update(body).digest('hex');

/**
 * True when `header` is the signature of `body` under `secret`. Compares in constant time, so a
 * webhook receiver can use it as is; a missing or malformed header is simply false.
 */
export const verifySignature = (
  secret: string,
  body: string | Uint8Array,
  header: string | null | undefined,
): boolean => {
  if (typeof header !== 'string' || !header.startsWith(PREFIX)) return false;
  const given = header.slice(PREFIX.length);
  if (!HEX_DIGEST.test(given)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
};
