import { ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { parsePutTool } from '../config/config-requests.js';
import { parseToolResult } from './tool-results.js';

/** The field a refused body names. */
const fieldOf = (run: () => unknown): string | undefined => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  return undefined;
};

describe('client tool bodies (API.md "Client tools")', () => {
  it('an answer is { ok: true, result } or { ok: false, error: { message } }; anything else names its field', () => {
    expect(parseToolResult({ ok: true, result: { title: 'Home' } })).toEqual({
      ok: true,
      resultJson: '{"title":"Home"}',
    });
    expect(parseToolResult({ ok: true, result: null })).toEqual({ ok: true, resultJson: 'null' });
    expect(parseToolResult({ ok: false, error: { message: 'tab closed' } })).toEqual({
      ok: false,
      errorMessage: 'tab closed',
    });
    expect(fieldOf(() => parseToolResult({ result: 1 }))).toBe('ok');
    expect(fieldOf(() => parseToolResult({ ok: true }))).toBe('result');
    expect(fieldOf(() => parseToolResult({ ok: true, result: 1, error: { message: 'x' } }))).toBe('error');
    expect(fieldOf(() => parseToolResult({ ok: false }))).toBe('error');
    expect(fieldOf(() => parseToolResult({ ok: false, error: {} }))).toBe('error.message');
    expect(fieldOf(() => parseToolResult({ ok: false, error: { message: 'x', code: 'y' } }))).toBe(
      'error.code',
    );
    expect(fieldOf(() => parseToolResult([]))).toBe('body');
  });

  it('a client tool has no url, a deadline of 100 to 600,000 ms (default 90,000) and may have an outputSchema', () => {
    const inputSchema = { type: 'object' };
    const outputSchema = { type: 'object', required: ['title'] };
    expect(parsePutTool('read_page', { kind: 'client', inputSchema, outputSchema })).toMatchObject({
      kind: 'client',
      url: '',
      timeoutMs: 90_000,
      outputSchemaJson: JSON.stringify(outputSchema),
    });
    expect(parsePutTool('read_page', { kind: 'client', inputSchema, timeoutMs: 600_000 }).timeoutMs).toBe(
      600_000,
    );
    expect(fieldOf(() => parsePutTool('t', { kind: 'client', inputSchema, url: 'https://x.test' }))).toBe(
      'url',
    );
    expect(fieldOf(() => parsePutTool('t', { kind: 'client', inputSchema, timeoutMs: 600_001 }))).toBe(
      'timeoutMs',
    );
    // A webhook keeps its 120,000 ms limit and has no outputSchema.
    const webhook = { kind: 'webhook', url: 'https://x.test', inputSchema };
    expect(fieldOf(() => parsePutTool('t', { ...webhook, timeoutMs: 120_001 }))).toBe('timeoutMs');
    expect(fieldOf(() => parsePutTool('t', { ...webhook, outputSchema }))).toBe('outputSchema');
  });
});
