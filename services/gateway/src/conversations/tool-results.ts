// The body of `POST /v1/conversations/{id}/tool-results/{toolCallId}` (API.md "Client tools").
import { fail, objectWith, requiredString } from '../config/request-fields.js';

/** keel.conversations.v1.SubmitToolResultRequest's fields the body sets. */
export interface ToolResultFields {
  ok: boolean;
  /** The result as JSON text (ok only). */
  resultJson?: string;
  /** The client's error message (not ok only). */
  errorMessage?: string;
}

/** The longest error message a client may send the model. */
export const MAX_CLIENT_ERROR_CHARS = 4_000;

/**
 * `{ "ok": true, "result": <JSON> }` or `{ "ok": false, "error": { "message" } }`; anything else
 * is a 400 naming the field. The result's shape is the tool's outputSchema's business (the agent).
 */
export const parseToolResult = (body: unknown): ToolResultFields => {
  const object = objectWith(body, ['ok', 'result', 'error']);
  if (typeof object.ok !== 'boolean') return fail('ok', 'ok is required (true or false)');
  if (object.ok) {
    if (object.error !== undefined) fail('error', 'error is only for ok: false');
    if (object.result === undefined) fail('result', 'result is required when ok is true');
    return { ok: true, resultJson: JSON.stringify(object.result) };
  }
  if (object.result !== undefined) fail('result', 'result is only for ok: true');
  const error = objectWith(object.error, ['message'], 'error');
  return { ok: false, errorMessage: requiredString(error.message, 'error.message', MAX_CLIENT_ERROR_CHARS) };
};
