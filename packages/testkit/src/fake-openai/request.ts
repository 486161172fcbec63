import type { IncomingMessage } from 'node:http';
import type { FakeChatRequest } from './types.js';
import { messageText } from './wire.js';

/** Request headers as one string each, names lower-cased as Node gives them. */
export function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** The request body, or why it is not a chat completions request. */
export function parseChatRequest(raw: string): FakeChatRequest | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return `the body is not JSON: ${raw.slice(0, 80)}`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return 'the body is not a JSON object';
  const body = parsed as Record<string, unknown>;
  if (typeof body['model'] !== 'string') return "'model' is required";
  if (!Array.isArray(body['messages'])) return "'messages' must be an array";
  return body as FakeChatRequest;
}

/** A one-line summary of a chat request for error messages; the last user message is cut to 80 characters. */
export function describeRequest(request: FakeChatRequest): string {
  const lastUser = messageText(request.messages.findLast((m) => m.role === 'user'));
  const shown = lastUser.length > 80 ? `${lastUser.slice(0, 80)}…` : lastUser;
  return `model ${request.model}, ${request.messages.length} messages, stream ${request.stream === true}, last user message ${JSON.stringify(shown)}`;
}
