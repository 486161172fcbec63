import { ResourceExhaustedError, UnavailableError, ValidationError } from '@keel/core';
import { describe, expect, it } from 'vitest';
import { raceAbort, toModelError } from './model-errors.js';

const statusError = (status: number, message: string) => Object.assign(new Error(message), { status });

describe('raceAbort', () => {
  it('rejects with an AbortError when the signal aborts, even if the provider never settles', async () => {
    const controller = new AbortController();
    const never = new Promise<string>(() => undefined);

    const raced = raceAbort(never, controller.signal);
    controller.abort(new Error('turn cancelled'));

    await expect(raced).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('passes the value through while the signal is not aborted', async () => {
    await expect(raceAbort(Promise.resolve(42), new AbortController().signal)).resolves.toBe(42);
  });
});

describe('toModelError', () => {
  it.each([
    [500, UnavailableError],
    [503, UnavailableError],
    [408, UnavailableError],
    [429, ResourceExhaustedError],
    [400, ValidationError],
    [404, ValidationError],
  ])('maps HTTP %i to %o', (status, type) => {
    const error = toModelError(statusError(status, 'provider says no'), 'anthropic', []);
    expect(error).toBeInstanceOf(type);
    expect(error.message).toBe(`anthropic answered ${status}: provider says no`);
  });

  it('reads the Ollama client status_code', () => {
    const error = Object.assign(new Error('model "x" not found'), { status_code: 404 });
    expect(toModelError(error, 'ollama', [])).toBeInstanceOf(ValidationError);
  });

  it('maps a refused connection to an UnavailableError', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const error = toModelError(new TypeError('fetch failed', { cause: refused }), 'ollama', []);
    expect(error).toBeInstanceOf(UnavailableError);
  });

  it('leaves an unknown error as it is, but never with a secret in it', () => {
    const bug = new RangeError('something broke');
    expect(toModelError(bug, 'openai', ['sk-secret'])).toBe(bug);

    const leaky = toModelError(new Error('bad header Bearer sk-secret'), 'openai', ['sk-secret']);
    expect(leaky.message).toBe('bad header Bearer [redacted]');
  });

  it('never echoes an endpoint: the platform base URL may be an internal host', () => {
    const error = new TypeError(
      '[GoogleGenerativeAI Error]: Error fetching from http://10.1.2.3:8443/v1beta/models/gemini:streamGenerateContent?alt=sse: fetch failed',
    );

    const mapped = toModelError(error, 'google', []);

    expect(mapped).toBeInstanceOf(UnavailableError);
    expect(mapped.message).not.toContain('10.1.2.3');
    expect(mapped.message).toContain('<provider endpoint>');
  });
});
