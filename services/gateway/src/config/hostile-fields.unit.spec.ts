import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { parseCreateConversation, parseSendMessage } from '../conversations/conversation-requests.js';
import { MAX_JSON_DEPTH, checkJsonTree, decodeUtf8Body } from '../http/json-body.js';
import { parsePutAgent, parsePutProvider, parsePutTool } from './config-requests.js';

/** The field a refusal names (ValidationError.field), or fails the test when it was accepted. */
const refusedField = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).field ?? '';
  }
  throw new Error('accepted');
};

const schema = { type: 'object' };
const tool = (extra: Record<string, unknown>) => parsePutTool('t', { inputSchema: schema, ...extra });
const agent = (extra: Record<string, unknown>) => parsePutAgent('a', { model: 'openai:x', ...extra });
const nested = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

describe('zero means zero: absent takes the default, a given value must be in range', () => {
  it('fills the documented defaults only when a field is absent', () => {
    expect(agent({})).toMatchObject({ maxSteps: 8, toolResultMaxChars: 8_000, temperature: 0 });
    expect(tool({}).timeoutMs).toBe(10_000);
  });

  it('refuses 0, -0, 1e-400 (parsed as 0), negatives, fractions and out-of-range values', () => {
    const zeroes = JSON.parse('[0, -0, 1e-400, -1, 1.5, 100000000, 1e400]') as unknown[];
    for (const value of zeroes) {
      expect(refusedField(() => agent({ maxSteps: value }))).toBe('maxSteps');
      expect(refusedField(() => tool({ timeoutMs: value }))).toBe('timeoutMs');
      expect(refusedField(() => agent({ toolResultMaxChars: value }))).toBe('toolResultMaxChars');
    }
    for (const value of [-0.1, 2.01, Number.NaN, 'NaN', '0', null]) {
      expect(refusedField(() => agent({ temperature: value }))).toBe('temperature');
    }
    expect(agent({ maxSteps: 1, temperature: -0 })).toMatchObject({ maxSteps: 1, temperature: 0 });
    expect(Object.is(agent({ temperature: -0 }).temperature, 0)).toBe(true);
  });
});

describe('bounded requests', () => {
  it('refuses more than 128 tools and over-long names, naming the field', () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `t${i}`);
    const started = performance.now();
    expect(refusedField(() => agent({ tools: many }))).toBe('tools');
    expect(performance.now() - started).toBeLessThan(50);
    expect(refusedField(() => agent({ tools: ['x'.repeat(65)] }))).toBe('tools[0]');
    expect(refusedField(() => agent({ tools: ['ok', 7] }))).toBe('tools[1]');
    expect(refusedField(() => tool({ roles: ['admin', 'editor', 'viewer', 'admin'] }))).toBe('roles');
    expect(refusedField(() => tool({ phases: Array.from({ length: 51 }, (_, i) => `p${i}`) }))).toBe(
      'phases',
    );
  });

  it('refuses an inputSchema over 64 KiB or nested deeper than 32 levels', () => {
    expect(refusedField(() => tool({ inputSchema: { type: 'object', d: 'x'.repeat(70_000) } }))).toBe(
      'inputSchema',
    );
    const deep = { type: 'object', p: nested(10_000) };
    expect(refusedField(() => tool({ inputSchema: deep }))).toMatch(/^inputSchema\.p(\.a)+$/);
    expect(
      tool({ inputSchema: { type: 'object', p: nested(MAX_JSON_DEPTH - 2) } }).inputSchemaJson,
    ).toContain('"a"');
  });

  it('bounds metadata: 64 keys, word keys, short string values', () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    expect(Object.keys(parseCreateConversation({ agentId: 'a', metadata: keys(64) }).metadata)).toHaveLength(
      64,
    );
    expect(refusedField(() => parseCreateConversation({ agentId: 'a', metadata: keys(40_000) }))).toBe(
      'metadata',
    );
    for (const key of ['$ne', 'a.b', '', 'k'.repeat(65), 'sp ace']) {
      expect(refusedField(() => parseCreateConversation({ agentId: 'a', metadata: { [key]: 'v' } }))).toBe(
        'metadata',
      );
    }
    expect(
      refusedField(() => parseCreateConversation({ agentId: 'a', metadata: { k: { $ne: null } } })),
    ).toBe('metadata.k');
    expect(
      refusedField(() => parseCreateConversation({ agentId: 'a', metadata: { k: 'v'.repeat(513) } })),
    ).toBe('metadata.k');
    // A key named like a prototype member is an ordinary key.
    const { metadata } = parseCreateConversation({
      agentId: 'a',
      metadata: { constructor: 'c', toString: 't' },
    });
    expect({ ...metadata }).toEqual({ constructor: 'c', toString: 't' });
  });

  it('refuses a JSON null body where an object is expected (no body at all is still `{}`)', () => {
    expect(refusedField(() => parsePutProvider('openai', null))).toBe('body');
    expect(parsePutProvider('openai', undefined)).toEqual({ provider: 'openai' });
  });

  it('refuses operator objects where a string is expected', () => {
    expect(refusedField(() => parseCreateConversation({ agentId: { $ne: null } }))).toBe('agentId');
    expect(refusedField(() => parseSendMessage({ content: { $gt: '' } }))).toBe('content');
  });
});

describe('broken text', () => {
  it('refuses a lone surrogate in any string field, naming it', () => {
    expect(refusedField(() => agent({ instructions: 'fuzz \ud800' }))).toBe('instructions');
    expect(refusedField(() => parseSendMessage({ content: 'a\udc00b' }))).toBe('content');
    expect(refusedField(() => parseCreateConversation({ agentId: 'a', title: '\ud83d' }))).toBe('title');
    expect(refusedField(() => agent({ tools: ['\ud800'] }))).toBe('tools[0]');
    expect(parseSendMessage({ content: 'emoji 😀 ok' }).content).toBe('emoji 😀 ok');
  });

  it('checks a whole body without recursion: strings, keys and depth', () => {
    expect(refusedField(() => checkJsonTree({ a: [{ b: 'x\ud800' }] }))).toBe('a[0].b');
    expect(refusedField(() => checkJsonTree({ a: { 'k\udfff': 1 } }))).toBe('a');
    expect(refusedField(() => checkJsonTree(nested(10_000)))).toMatch(/^a(\.a)*$/);
    expect(
      refusedField(() => checkJsonTree(JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`))),
    ).toMatch(/^(body|\[0\])/);
    expect(() => checkJsonTree({ ok: ['😀', { deep: nested(20) }] })).not.toThrow();
  });

  it('refuses bytes that are not UTF-8 instead of storing U+FFFD', () => {
    expect(refusedField(() => decodeUtf8Body(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])))).toBe('body');
    // CESU-style encoded surrogate (ED A0 80) is not UTF-8 either.
    expect(refusedField(() => decodeUtf8Body(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])))).toBe('body');
    expect(decodeUtf8Body(Buffer.from('"é😀"'))).toBe('"é😀"');
  });
});
