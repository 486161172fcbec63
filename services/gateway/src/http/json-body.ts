// What every JSON request body must be before any route reads it (API.md Conventions: UTF-8 JSON;
// 400 `invalid_request` naming the field): valid UTF-8, shallow enough to be walked by recursive
// code (JSON.stringify, schema compilers), and text that is well-formed Unicode, keys included,
// so that what is stored is returned unchanged.
import { ValidationError } from '@keel/core';

/** Deepest nesting of objects and arrays a request body may have (the body itself is depth 1). */
export const MAX_JSON_DEPTH = 32;

/** Most object keys plus array items in one body: a 1 MiB body cannot hide more work than this. */
export const MAX_JSON_NODES = 100_000;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The body's text; bytes that are not UTF-8 are refused (never decoded to U+FFFD and stored). */
export const decodeUtf8Body = (bytes: Uint8Array): string => {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ValidationError('body: is not valid UTF-8', { field: 'body' });
  }
};

/** A key as a path segment: `a.b`, `a[3]`; long keys are cut so the detail stays short. */
const child = (path: string, key: string | number): string => {
  if (typeof key === 'number') return `${path}[${key}]`;
  const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return path === '' ? shown : `${path}.${shown}`;
};

/**
 * Checks a parsed JSON value without recursion (a deep value cannot overflow the stack here):
 * nesting at most `maxDepth`, at most `MAX_JSON_NODES` keys and items, and every string and key
 * well-formed UTF-16 (no lone surrogate). Throws a ValidationError naming the first bad field
 * (`prefix` names the value itself, e.g. `body` or `inputSchema`).
 */
export const checkJsonTree = (value: unknown, prefix = '', maxDepth = MAX_JSON_DEPTH): void => {
  const stack: Array<[unknown, string, number]> = [[value, prefix, 1]];
  let nodes = 0;
  const name = (path: string): string => path || 'body';
  while (stack.length > 0) {
    const [item, path, depth] = stack.pop()!;
    if (typeof item === 'string') {
      if (!item.isWellFormed()) {
        throw new ValidationError(`${name(path)} is not valid Unicode text (a lone surrogate)`, {
          field: name(path),
        });
      }
      continue;
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth > maxDepth) {
      throw new ValidationError(`${name(path)} is nested deeper than ${maxDepth} levels`, {
        field: name(path),
      });
    }
    if (Array.isArray(item)) {
      nodes += item.length;
      if (nodes > MAX_JSON_NODES) throw tooMany(name(path));
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], child(path, i), depth + 1]);
      continue;
    }
    const keys = Object.keys(item);
    nodes += keys.length;
    if (nodes > MAX_JSON_NODES) throw tooMany(name(path));
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      if (!key.isWellFormed()) {
        throw new ValidationError(`${name(path)} has a key that is not valid Unicode text`, {
          field: name(path),
        });
      }
      stack.push([(item as Record<string, unknown>)[key], child(path, key), depth + 1]);
    }
  }
};

const tooMany = (field: string): ValidationError =>
  new ValidationError(`${field} has more than ${MAX_JSON_NODES} keys and items in all`, { field });
