import { createHash } from 'node:crypto';
import { ValidationError, messageOf } from '@keel/core';
import { _, Ajv } from 'ajv';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { safeRegExp } from './safe-pattern.js';
import type { JsonSchema } from './json-schema.js';

/** One problem with the arguments: where (`$`, `$.city`, `$.items[0].name`) and what, for the model. */
export interface ArgsProblem {
  path: string;
  message: string;
}

/** The verdict on a tool call's arguments. */
export type ArgsValidation = { ok: true } | { ok: false; errors: ArgsProblem[] };

/** Tuning of the validator. */
export interface ArgsValidatorOptions {
  /** Compiled schemas kept (least recently used dropped first); default 1000. */
  maxCachedSchemas?: number;
  /** Problems reported per call at most; default 20. */
  maxErrors?: number;
}

/** Largest tool input schema accepted at registration (serialized JSON), 64 KiB. */
export const MAX_TOOL_SCHEMA_BYTES = 64 * 1024;

type Compiled = { validate: ValidateFunction } | { error: ValidationError };

// ajv-formats ships CommonJS with `exports.default`; under NodeNext the default import is the module.
const formatsPlugin = ((addFormatsPlugin as unknown as { default?: typeof addFormatsPlugin }).default ??
  addFormatsPlugin) as unknown as (ajv: Ajv, options: { mode: 'full'; keywords: boolean }) => Ajv;

/**
 * ajv-formats resolves its own copy of ajv (the repo root holds ajv 6 for ESLint), and ajv's code
 * generator does not recognise another copy's code fragments: its `formatMinimum`-style keywords
 * compile to broken validators. So: formats only (no such keywords, ignored as unknown), and the
 * plugin's code reference built with our copy's `_` so nothing foreign reaches the generator.
 */
const addFormats = (ajv: Ajv): Ajv => formatsPlugin(ajv, { mode: 'full', keywords: false });

const AJV_OPTIONS: Options = {
  allErrors: true,
  // Tenants' schemas may carry keywords ajv does not know (`examples` extensions, vendor keys):
  // ignore them rather than refuse the tool. Structural mistakes still fail the meta-schema.
  strict: false,
  // Never change the model's arguments while checking them.
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  // Compiled functions live in our cache; schemas sharing an `$id` must not clash in ajv's registry.
  addUsedSchema: false,
  $data: false,
  // Patterns run on the shared event loop: one that could backtrack exponentially is refused.
  code: { formats: _`require("ajv-formats/dist/formats").fullFormats`, regExp: safeRegExp },
};

/**
 * Validates tool arguments against the tool's JSON Schema (draft-07, or 2020-12 when the schema
 * says so). Each distinct schema is compiled once, keyed by a hash of its canonical JSON.
 */
export class ArgsValidator {
  readonly #cache = new Map<string, Compiled>();
  readonly #maxCached: number;
  readonly #maxErrors: number;
  #draft7: Ajv | undefined;
  #draft2020: Ajv | undefined;

  constructor(options: ArgsValidatorOptions = {}) {
    this.#maxCached = Math.max(1, options.maxCachedSchemas ?? 1000);
    this.#maxErrors = Math.max(1, options.maxErrors ?? 20);
  }

  /** Checks `args` against `schema`; throws ValidationError only when the schema itself is broken. */
  validate(schema: JsonSchema, args: unknown): ArgsValidation {
    const validate = this.compile(schema);
    if (validate(args)) return { ok: true };
    return { ok: false, errors: this.#problems(validate.errors ?? []) };
  }

  /** The compiled validator of `schema` (cached); ValidationError (field `inputSchema`) if it does not compile. */
  compile(schema: JsonSchema): ValidateFunction {
    const key = schemaHash(schema);
    let compiled = this.#cache.get(key);
    if (compiled) {
      // Refresh its place: the Map's insertion order is the eviction order.
      this.#cache.delete(key);
    } else {
      compiled = this.#compileFresh(schema);
      if (this.#cache.size >= this.#maxCached) {
        const oldest = this.#cache.keys().next();
        if (!oldest.done) this.#cache.delete(oldest.value);
      }
    }
    this.#cache.set(key, compiled);
    if ('error' in compiled) throw compiled.error;
    return compiled.validate;
  }

  /** For tool registration: an object schema (`type: 'object'`) within the size limit that compiles. */
  assertToolSchema(schema: unknown, maxBytes: number = MAX_TOOL_SCHEMA_BYTES): asserts schema is JsonSchema {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      throw new ValidationError('inputSchema must be a JSON Schema object', { field: 'inputSchema' });
    }
    const size = Buffer.byteLength(JSON.stringify(schema) ?? '', 'utf8');
    if (size > maxBytes) {
      throw new ValidationError(`inputSchema is ${size} bytes, over the ${maxBytes}-byte limit`, {
        field: 'inputSchema',
        details: { sizeBytes: size, limitBytes: maxBytes },
      });
    }
    if ((schema as Record<string, unknown>)['type'] !== 'object') {
      throw new ValidationError('inputSchema must have "type": "object" (tool arguments are a JSON object)', {
        field: 'inputSchema.type',
      });
    }
    this.compile(schema as JsonSchema);
  }

  #compileFresh(schema: JsonSchema): Compiled {
    try {
      return { validate: this.#ajvFor(schema).compile(schema) };
    } catch (error) {
      const reason = messageOf(error);
      return {
        error: new ValidationError(`inputSchema is not a valid JSON Schema: ${reason}`, {
          field: 'inputSchema',
          cause: error,
        }),
      };
    }
  }

  #ajvFor(schema: JsonSchema): Ajv {
    const dialect = schema['$schema'];
    if (typeof dialect === 'string' && dialect.includes('2020-12')) {
      return (this.#draft2020 ??= addFormats(new Ajv2020(AJV_OPTIONS)));
    }
    return (this.#draft7 ??= addFormats(new Ajv(AJV_OPTIONS)));
  }

  #problems(errors: ErrorObject[]): ArgsProblem[] {
    const seen = new Set<string>();
    const problems: ArgsProblem[] = [];
    for (const error of errors) {
      const problem = describe(error);
      const id = `${problem.path}\u0000${problem.message}`;
      if (seen.has(id)) continue;
      seen.add(id);
      problems.push(problem);
      if (problems.length === this.#maxErrors) break;
    }
    return problems;
  }
}

/** The process-wide validator (one cache for all tenants' schemas). */
export const defaultArgsValidator = new ArgsValidator();

/** Registration check of a tool's input schema; throws ValidationError naming what is wrong. */
export const assertToolSchema: (schema: unknown, maxBytes?: number) => asserts schema is JsonSchema = (
  schema,
  maxBytes,
) => defaultArgsValidator.assertToolSchema(schema, maxBytes);

/** One line for a tool error: `invalid arguments: $.city is required; $.days must be <= 14`. */
export const formatArgsProblems = (problems: readonly ArgsProblem[]): string =>
  `invalid arguments: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`;

/** sha256 of the schema's canonical JSON (object keys sorted), so equal schemas share one compile. */
export const schemaHash = (schema: unknown): string =>
  createHash('sha256').update(canonicalJson(schema)).digest('hex');

const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};

const describe = (error: ErrorObject): ArgsProblem => {
  const at = pathOf(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: child(at, String(params['missingProperty'])), message: 'is required' };
    case 'additionalProperties':
      return {
        path: child(at, String(params['additionalProperty'])),
        message: 'is not an allowed property; remove it',
      };
    case 'unevaluatedProperties':
      return {
        path: child(at, String(params['unevaluatedProperty'])),
        message: 'is not an allowed property; remove it',
      };
    case 'enum': {
      const allowed = Array.isArray(params['allowedValues']) ? params['allowedValues'] : [];
      return { path: at, message: `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` };
    }
    case 'const':
      return { path: at, message: `must be ${JSON.stringify(params['allowedValue'])}` };
    default:
      return { path: at, message: error.message ?? `fails "${error.keyword}"` };
  }
};

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `/items/0/first name` → `$.items[0]["first name"]`. */
const pathOf = (pointer: string): string => {
  if (pointer === '') return '$';
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (path, segment) => (/^(0|[1-9][0-9]*)$/.test(segment) ? `${path}[${segment}]` : child(path, segment)),
      '$',
    );
};

const child = (path: string, key: string): string =>
  IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
