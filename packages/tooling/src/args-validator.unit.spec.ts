import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import {
  ArgsValidator,
  MAX_TOOL_SCHEMA_BYTES,
  assertToolSchema,
  formatArgsProblems,
  schemaHash,
} from './args-validator.js';

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1 },
    units: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 14 },
    when: { type: 'string', format: 'date' },
    notify: { type: 'string', format: 'email' },
    stops: { type: 'array', items: { type: 'object', properties: { 'first name': { type: 'string' } } } },
  },
  required: ['city'],
  additionalProperties: false,
} as const;

describe('ArgsValidator.validate', () => {
  it('accepts arguments that satisfy the schema', () => {
    const validator = new ArgsValidator();
    expect(
      validator.validate(weather, { city: 'Lyon', units: 'celsius', days: 3, when: '2025-03-10' }),
    ).toEqual({
      ok: true,
    });
  });

  it('reports every problem with a path and a message a model can act on', () => {
    const validator = new ArgsValidator();
    const verdict = validator.validate(weather, {
      units: 'kelvin',
      days: 30,
      when: '10/03/2025',
      notify: 'nobody',
      stops: [{ 'first name': 7 }],
      color: 'red',
    });
    expect(verdict).toEqual({
      ok: false,
      errors: expect.arrayContaining([
        { path: '$.city', message: 'is required' },
        { path: '$.color', message: 'is not an allowed property; remove it' },
        { path: '$.units', message: 'must be one of "celsius", "fahrenheit"' },
        { path: '$.days', message: 'must be <= 14' },
        { path: '$.when', message: 'must match format "date"' },
        { path: '$.notify', message: 'must match format "email"' },
        { path: '$.stops[0]["first name"]', message: 'must be string' },
      ]),
    });
    expect(verdict.ok === false && verdict.errors).toHaveLength(7);
  });

  it('reports non-object arguments at the root', () => {
    const validator = new ArgsValidator();
    expect(validator.validate(weather, 'Lyon')).toEqual({
      ok: false,
      errors: [{ path: '$', message: 'must be object' }],
    });
    expect(validator.validate(weather, null)).toEqual({
      ok: false,
      errors: [{ path: '$', message: 'must be object' }],
    });
  });

  it('never changes the arguments (no defaults, no coercion, no removal)', () => {
    const validator = new ArgsValidator();
    const schema = {
      type: 'object',
      properties: { n: { type: 'number' }, d: { type: 'string', default: 'x' } },
      additionalProperties: false,
    };
    const args = { n: '5' };
    expect(validator.validate(schema, args).ok).toBe(false);
    expect(args).toEqual({ n: '5' });
  });

  it('caps the number of problems reported', () => {
    const validator = new ArgsValidator({ maxErrors: 3 });
    const args = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, i]));
    const verdict = validator.validate({ type: 'object', additionalProperties: false }, args);
    expect(verdict.ok === false && verdict.errors).toHaveLength(3);
  });

  it('compiles each distinct schema once, whatever its key order or object identity', () => {
    const validator = new ArgsValidator();
    const a = validator.compile({ type: 'object', properties: { x: { type: 'string' } } });
    const b = validator.compile({ properties: { x: { type: 'string' } }, type: 'object' });
    const c = validator.compile({ type: 'object', properties: { x: { type: 'number' } } });
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(schemaHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(schemaHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(schemaHash({ a: [1, 2] })).not.toBe(schemaHash({ a: [2, 1] }));
  });

  it('evicts the least recently used schema past its cache size', () => {
    const validator = new ArgsValidator({ maxCachedSchemas: 2 });
    const s = (n: number) => ({ type: 'object', properties: { [`p${n}`]: { type: 'string' } } });
    const first = validator.compile(s(1));
    validator.compile(s(2));
    expect(validator.compile(s(1))).toBe(first);
    validator.compile(s(3)); // evicts s(2), the least recently used
    expect(validator.compile(s(1))).toBe(first);
    validator.compile(s(4));
    validator.compile(s(5));
    expect(validator.compile(s(1))).not.toBe(first);
  });

  it('lets schemas that share an $id live side by side', () => {
    const validator = new ArgsValidator();
    const one = { $id: 'https://example.com/args', type: 'object', properties: { a: { type: 'string' } } };
    const two = { $id: 'https://example.com/args', type: 'object', properties: { a: { type: 'number' } } };
    expect(validator.validate(one, { a: 'x' }).ok).toBe(true);
    expect(validator.validate(two, { a: 1 }).ok).toBe(true);
    expect(validator.validate(one, { a: 1 }).ok).toBe(false);
  });

  it('ignores keywords it does not know, and reads 2020-12 schemas', () => {
    const validator = new ArgsValidator();
    expect(validator.validate({ type: 'object', 'x-vendor': { ui: 'slider' } }, {}).ok).toBe(true);
    const tuple = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        point: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false },
      },
    };
    expect(validator.validate(tuple, { point: [1, 2] }).ok).toBe(true);
    expect(validator.validate(tuple, { point: [1, 'y'] })).toEqual({
      ok: false,
      errors: [{ path: '$.point[1]', message: 'must be number' }],
    });
  });

  it('a schema that does not compile is a ValidationError on inputSchema, every time', () => {
    const validator = new ArgsValidator();
    for (const schema of [
      { type: 'objekt' },
      { type: 'object', properties: { a: { $ref: 'https://example.com/remote.json' } } },
      { type: 'object', properties: { a: { type: 'string', pattern: '(' } } },
      { type: 'object', required: 'city' },
    ]) {
      for (let i = 0; i < 2; i++) {
        const run = () => validator.validate(schema, {});
        expect(run).toThrow(ValidationError);
        expect(run).toThrow(/^inputSchema is not a valid JSON Schema: /);
        try {
          run();
        } catch (error) {
          expect((error as ValidationError).field).toBe('inputSchema');
        }
      }
    }
  });
});

describe('assertToolSchema', () => {
  it('accepts an object schema that compiles', () => {
    expect(() => assertToolSchema(weather)).not.toThrow();
    expect(() => assertToolSchema({ type: 'object' })).not.toThrow();
  });

  it.each([
    [null, /must be a JSON Schema object/],
    [[], /must be a JSON Schema object/],
    ['{"type":"object"}', /must be a JSON Schema object/],
    [{ properties: {} }, /must have "type": "object"/],
    [{ type: 'string' }, /must have "type": "object"/],
    [{ type: ['object', 'null'] }, /must have "type": "object"/],
    [{ type: 'object', properties: { a: { type: 'nope' } } }, /not a valid JSON Schema/],
  ])('refuses %j', (schema, message) => {
    expect(() => assertToolSchema(schema)).toThrow(ValidationError);
    expect(() => assertToolSchema(schema)).toThrow(message);
  });

  it(`refuses schemas over ${MAX_TOOL_SCHEMA_BYTES} bytes`, () => {
    const big = { type: 'object', description: 'x'.repeat(MAX_TOOL_SCHEMA_BYTES) };
    expect(() => assertToolSchema(big)).toThrow(/bytes, over the 65536-byte limit/);
    expect(() => assertToolSchema({ type: 'object', description: 'x'.repeat(100) }, 50)).toThrow(
      /50-byte limit/,
    );
  });
});

describe('formatArgsProblems', () => {
  it('makes one line for the model', () => {
    expect(
      formatArgsProblems([
        { path: '$.city', message: 'is required' },
        { path: '$.days', message: 'must be <= 14' },
      ]),
    ).toBe('invalid arguments: $.city is required; $.days must be <= 14');
  });
});
