import { afterEach, describe, expect, it } from 'vitest';
import { FERRETDB_BACKEND_ENV, requestedBackend } from './local-ferretdb.js';

describe('the FerretDB backend a run asks for', () => {
  const before = process.env[FERRETDB_BACKEND_ENV];
  afterEach(() => {
    if (before === undefined) delete process.env[FERRETDB_BACKEND_ENV];
    else process.env[FERRETDB_BACKEND_ENV] = before;
  });

  it('is left to the caller when unset or auto, and forced by pg, postgresql or sqlite in any case', () => {
    const asked = (value: string | undefined) => {
      if (value === undefined) delete process.env[FERRETDB_BACKEND_ENV];
      else process.env[FERRETDB_BACKEND_ENV] = value;
      return requestedBackend();
    };
    expect([undefined, '', 'auto'].map(asked)).toEqual(['auto', 'auto', 'auto']);
    expect(['pg', 'PostgreSQL', ' sqlite '].map(asked)).toEqual(['pg', 'pg', 'sqlite']);
  });

  it('refuses anything else, naming the variable', () => {
    process.env[FERRETDB_BACKEND_ENV] = 'mysql';
    expect(() => requestedBackend()).toThrow(/KEEL_TEST_FERRETDB_BACKEND=mysql: expected pg or sqlite/);
  });
});
