import { ValidationError } from '@keel/core';
import { MAX_JSON_DEPTH, checkJsonTree } from '../http/json-body.js';

/** Refuses a request, naming the failing field (API.md: 400 `invalid_request`, field in `detail`). */
export const fail = (field: string, message: string): never => {
  throw new ValidationError(message.startsWith(field) ? message : `${field} ${message}`, { field });
};

/** The body as a plain object holding only `allowed` fields; anything else is refused by name. */
export const objectWith = (
  body: unknown,
  allowed: readonly string[],
  field = 'body',
): Record<string, unknown> => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail(field, `${field} must be a JSON object`);
  }
  const unknown = Object.keys(body).find((key) => !allowed.includes(key));
  if (unknown !== undefined) {
    const name = field === 'body' ? unknown : `${field}.${unknown}`;
    fail(name, `${name}: unknown field (allowed: ${allowed.join(', ')})`);
  }
  return body as Record<string, unknown>;
};

/** An optional string field (undefined when absent); a wrong type or a longer text is refused. */
export const optionalString = (value: unknown, field: string, maxLength = 100_000): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be a string`);
  if (value.length > maxLength) return fail(field, `${field} must be at most ${maxLength} characters`);
  if (!value.isWellFormed()) return fail(field, `${field} is not valid Unicode text (a lone surrogate)`);
  return value;
};

/** A required non-blank string field. */
export const requiredString = (value: unknown, field: string, maxLength = 100_000): string => {
  const text = optionalString(value, field, maxLength);
  if (text === undefined || text.trim() === '')
    return fail(field, `${field} is required (a non-empty string)`);
  return text;
};

/** An optional non-negative integer field. */
export const optionalInteger = (value: unknown, field: string): number | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    return fail(field, `${field} must be a non-negative integer`);
  }
  return value;
};

/** An optional finite number field. */
export const optionalNumber = (value: unknown, field: string): number | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) return fail(field, `${field} must be a number`);
  return value;
};

/** An optional integer from `min` to `max`: absent is undefined, present and out of range (0, -0, 1e-400 …) is refused. */
export const optionalIntegerIn = (
  value: unknown,
  field: string,
  min: number,
  max: number,
): number | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    return fail(field, `${field} must be an integer from ${min} to ${max}`);
  }
  return value;
};

/** An optional finite number from `min` to `max` (`-0` is read as 0). */
export const optionalNumberIn = (
  value: unknown,
  field: string,
  min: number,
  max: number,
): number | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    return fail(field, `${field} must be a number from ${min} to ${max}`);
  }
  return value === 0 ? 0 : value;
};

/** Most items of a list field unless a route says otherwise. */
export const MAX_LIST_ITEMS = 128;

/** An optional list of at most `maxItems` strings of at most `maxLength` characters each. */
export const optionalStrings = (
  value: unknown,
  field: string,
  maxItems = MAX_LIST_ITEMS,
  maxLength = 200,
): string[] | undefined => {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return fail(field, `${field} must be a list of strings`);
  if (value.length > maxItems) return fail(field, `${field} must have at most ${maxItems} items`);
  value.forEach((item, i) => optionalString(item ?? null, `${field}[${i}]`, maxLength));
  return value as string[];
};

/**
 * An optional free-form JSON object (a schema, metadata): nesting at most `maxDepth` (checked
 * without recursion before anything recursive sees it) and at most `maxBytes` as JSON text.
 */
export const optionalJsonObject = (
  value: unknown,
  field: string,
  maxBytes: number,
  maxDepth = MAX_JSON_DEPTH,
): Record<string, unknown> | undefined => {
  const object = optionalObject(value, field);
  if (object === undefined) return undefined;
  checkJsonTree(object, field, maxDepth);
  if (Buffer.byteLength(JSON.stringify(object)) > maxBytes) {
    return fail(field, `${field} must be at most ${maxBytes} bytes as JSON`);
  }
  return object;
};

/** An optional word out of `words`. */
export const optionalWord = <W extends string>(
  value: unknown,
  field: string,
  words: readonly W[],
): W | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(words as readonly string[]).includes(value)) {
    return fail(field, `${field} must be one of ${words.join(', ')}`);
  }
  return value as W;
};

/** An optional JSON object field (e.g. a JSON schema). */
export const optionalObject = (value: unknown, field: string): Record<string, unknown> | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(field, `${field} must be a JSON object`);
  }
  return value as Record<string, unknown>;
};
