import { describe, expect, it } from 'vitest';
import { EventTooLargeError } from '../errors/index.js';
import { EVENT_SIZE_LIMIT_BYTES } from './event-store.js';
import { prepareAppend } from './append-guard.js';

describe('prepareAppend size limit', () => {
  const sized = (text: string) => [{ type: 'T', data: text }];
  // JSON.stringify adds two quotes, metadata "{}" two bytes, the type one: 5 bytes of overhead.
  const room = EVENT_SIZE_LIMIT_BYTES - 5;

  it('counts UTF-8 bytes, not UTF-16 units, at the exact limit', () => {
    expect(() => prepareAppend('acme', 'doc-1', sized('a'.repeat(room)), 'any')).not.toThrow();
    expect(() => prepareAppend('acme', 'doc-1', sized('a'.repeat(room + 1)), 'any')).toThrow(
      EventTooLargeError,
    );
    // é is 2 bytes, € 3, 😀 4 (a surrogate pair).
    expect(() => prepareAppend('acme', 'doc-1', sized('é'.repeat(room / 2 + 1)), 'any')).toThrow(
      EventTooLargeError,
    );
    const emoji = '😀'.repeat(Math.floor(room / 4));
    expect(() => prepareAppend('acme', 'doc-1', sized(emoji), 'any')).not.toThrow();
    expect(() => prepareAppend('acme', 'doc-1', sized(`${emoji}€€`), 'any')).toThrow(EventTooLargeError);
  });
});
