import type { KeyObject } from 'node:crypto';
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes } from 'node:crypto';

/**
 * Where an event's sealed content sits in its `data`, beside the fields kept in clear. The name
 * cannot be a domain field (no event names a field with two leading underscores).
 */
export const SEALED_FIELD = '__sealed';

/**
 * An event's content as the log holds it: AES-256-GCM under the stream's data key (`iv`, `tag`,
 * `data` base64), or `erased` when it was written after the key was destroyed (the content was
 * dropped, not stored).
 */
export type SealedContent = { v: 1; iv: string; tag: string; data: string } | { erased: true };

/**
 * Field names kept in clear whatever their event: what projections and usage read without the
 * key (ids, times, usage figures, enum-like facts). Every other field of a sealed stream's event
 * is content and sealed: a field a new event type adds is sealed unless it is named here, so a
 * new event needs nothing to be covered.
 */
const CLEAR_STRING_FIELDS = new Set([
  'at',
  'by',
  'model',
  'role',
  'decision',
  'finishReason',
  'status',
  'costReason',
  'rating',
  // FeedbackGiven's replaced rating: usage moves the count by it, from the clear part after a delete.
  'previous',
  'kind',
  'executor',
]);

/** Ids (`…Id`) and instants (`…At`) are never content. */
const CLEAR_NAME = /(Id|At)$/;

/** Whether a top-level field of an event's data stays in clear: numbers, booleans, ids, times, enums. */
export const isClearField = (name: string, value: unknown): boolean => {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return true;
  if (typeof value === 'string') return CLEAR_STRING_FIELDS.has(name) || CLEAR_NAME.test(name);
  return false;
};

/** An event's data split into what stays in clear and the content to seal (undefined when none). */
export const splitContent = (
  data: unknown,
): { clear: Record<string, unknown>; content: Record<string, unknown> | undefined } => {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    // A payload that is not an object is content as a whole.
    return { clear: {}, content: data === undefined ? undefined : { [SEALED_FIELD]: data } };
  }
  const clear: Record<string, unknown> = {};
  let content: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (value === undefined) continue;
    if (isClearField(name, value)) clear[name] = value;
    else (content ??= {})[name] = value;
  }
  return { clear, content };
};

/** The data back from its clear part and its opened content. */
export const joinContent = (clear: Record<string, unknown>, content: Record<string, unknown>): unknown =>
  Object.hasOwn(content, SEALED_FIELD) ? content[SEALED_FIELD] : { ...clear, ...content };

/** The sealed content of an event's data, when it has one. */
export const sealedContentOf = (data: unknown): SealedContent | undefined => {
  if (typeof data !== 'object' || data === null || !Object.hasOwn(data, SEALED_FIELD)) return undefined;
  return (data as Record<string, unknown>)[SEALED_FIELD] as SealedContent;
};

/** The clear part of a sealed event's data (every field but the sealed content). */
export const clearPartOf = (data: unknown): Record<string, unknown> => {
  const { [SEALED_FIELD]: _sealed, ...clear } = data as Record<string, unknown>;
  return clear;
};

/** The KeyObjects made of key buffers (see `secretKeyOf`), each living as long as its buffer. */
const secretKeys = new WeakMap<Buffer, KeyObject>();

/**
 * `key` as a KeyObject, made once per buffer (a key buffer is never written to after it is made):
 * a cipher given a Buffer first tries it as a KeyObject and a CryptoKey, which costs Node 24 about
 * 40 us per cipher, four times the AES-GCM of a small event; given the KeyObject, nothing.
 */
export const secretKeyOf = (key: Buffer): KeyObject => {
  let secret = secretKeys.get(key);
  if (secret === undefined) secretKeys.set(key, (secret = createSecretKey(key)));
  return secret;
};

/** AES-256-GCM of `plaintext` under `key`, bound to `context` (additional data). */
export const sealText = (key: Buffer, plaintext: string, context: string): SealedContent => {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secretKeyOf(key), iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return {
    v: 1,
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
};

/** The plaintext of `sealed`; throws when the key or the context is not the one it was sealed with. */
export const openText = (key: Buffer, sealed: Extract<SealedContent, { v: 1 }>, context: string): string => {
  const decipher = createDecipheriv('aes-256-gcm', secretKeyOf(key), Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString(
    'utf8',
  );
};
