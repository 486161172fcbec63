import { ValidationError } from '@keel/core';

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

/** An optional list of strings. */
export const optionalStrings = (value: unknown, field: string): string[] | undefined => {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    return fail(field, `${field} must be a list of strings`);
  }
  return value as string[];
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
