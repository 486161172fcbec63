import type { IncomingMessage } from 'node:http';
import { uuidv7 } from '@keel/core';

/** The header a request id arrives and leaves in (API.md: accepted or generated, always echoed). */
export const REQUEST_ID_HEADER = 'x-request-id';

// It travels into logs and event metadata: a closed alphabet and a bounded length.
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's `X-Request-Id` when it is a sane token, else a fresh UUIDv7. */
export const requestIdOf = (request: Pick<IncomingMessage, 'headers'>): string => {
  const header = request.headers[REQUEST_ID_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && ACCEPTED.test(value) ? value : uuidv7();
};
