// HTTP calls on a gateway for end-to-end tests, as a tenant's backend makes them: a bearer key, a
// JSON body when there is one, any other headers; the answer read once, as text and JSON; and a
// message sent as a turn stream, read as SSE.
import type { SseStream } from '@keel/testkit';
import { openSse } from '@keel/testkit';

/** Sends `method path` to the gateway at `base` with `key` as bearer (none when undefined) and `body` as JSON. */
export const gatewayRequest = (
  base: string,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> =>
  fetch(`${base}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** The JSON object a response carries. */
export const jsonOf = async (response: Response): Promise<Record<string, unknown>> =>
  (await response.json()) as Record<string, unknown>;

/** A response read to its end. */
export interface Answer {
  status: number;
  headers: Headers;
  contentType: string;
  /** The body as sent. */
  text: string;
  /** The body parsed when it is JSON (`application/json`, `application/problem+json`); undefined when empty; else the text. */
  body: unknown;
}

/** Reads `response` to its end: status, headers, text and the JSON body. */
export const answerOf = async (response: Response): Promise<Answer> => {
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const json = contentType.includes('json') && text !== '';
  return {
    status: response.status,
    headers: response.headers,
    contentType,
    text,
    body: json ? (JSON.parse(text) as unknown) : text === '' ? undefined : text,
  };
};

/** Sends a message (`body`) with `Accept: text/event-stream` on the gateway at `base` and reads the turn stream. */
export const openTurnStream = (
  base: string,
  key: string,
  conversationId: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<SseStream> =>
  openSse(`${base}/v1/conversations/${conversationId}/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
