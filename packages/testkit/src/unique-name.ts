import { randomBytes } from 'node:crypto';

const MAX_LENGTH = 38;
const SUFFIX_LENGTH = 10;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh name for a test's MongoDB database or NATS stream, so parallel test files never share state. */
export function uniqueName(prefix: string): string {
  let head = prefix.replace(/[^A-Za-z0-9_]/g, '_').slice(0, MAX_LENGTH - SUFFIX_LENGTH - 1);
  if (!/^[A-Za-z]/.test(head)) head = `t${head}`.slice(0, MAX_LENGTH - SUFFIX_LENGTH - 1);
  return `${head}_${randomSuffix()}`;
}

function randomSuffix(): string {
  // 36^10 ≈ 3.6e15 names; the modulo bias of 256 % 36 is irrelevant for uniqueness.
  return Array.from(randomBytes(SUFFIX_LENGTH), (byte) => ALPHABET[byte % ALPHABET.length]).join('');
}
