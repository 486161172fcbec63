import { describe, expect, it } from 'vitest';
import { ApiError, apiErrorOf, describeError, InputError } from './problem';

const problem = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/problem+json' } });

describe('what the console says when the API refuses', () => {
  it('names the field of a 400 as the gateway does', async () => {
    const error = await apiErrorOf(
      problem(400, { status: 400, code: 'invalid_request', detail: 'name: must not be empty' }),
      'POST /v1/tenants',
    );
    expect(describeError(error)).toBe('Not accepted: name: must not be empty');
  });

  it('a 401 says the key was not accepted', () => {
    expect(describeError(new ApiError(401, 'unauthenticated', 'unknown key', 'GET /v1/me'))).toMatch(
      /not accepted \(401\)/,
    );
  });

  it('a route this gateway lacks is said plainly, apart from a missing resource', () => {
    expect(
      describeError(
        new ApiError(404, 'not_found', 'Cannot GET /v1/operator/overview', 'GET /v1/operator/overview'),
      ),
    ).toBe('This gateway does not serve GET /v1/operator/overview yet (404).');
    expect(
      describeError(new ApiError(404, 'not_found', 'conversation c1 not found', 'GET /v1/conversations/c1')),
    ).toBe('Not found (404): conversation c1 not found');
  });

  it('a body that is not JSON still gives the status; input refused before sending is its message', async () => {
    const error = await apiErrorOf(
      new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
      'GET /v1/me',
    );
    expect(describeError(error)).toBe('Bad Gateway (502)');
    expect(describeError(new InputError('Monthly budget: enter an amount in USD of 0 or more.'))).toBe(
      'Monthly budget: enter an amount in USD of 0 or more.',
    );
    expect(describeError(new TypeError('Failed to fetch'))).toBe(
      'Could not reach the gateway: Failed to fetch',
    );
  });
});
