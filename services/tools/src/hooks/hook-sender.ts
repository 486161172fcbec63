import { EgressPolicy, createEgressFetch, egressDeniedIn } from '@keel/runtime';
import { readBody, readSnippet } from '../execution/response-body.js';
import { signBody } from '../execution/webhook-signature.js';
import { DEFAULT_USER_AGENT } from '../execution/webhook-executor.js';

/** One POST of an event to a hook. */
export interface HookSend {
  url: string;
  /** Sent as `Idempotency-Key`: the same on every attempt and every redelivery of the event. */
  eventId: string;
  /** The public event name, sent as `X-Keel-Event`. */
  event: string;
  body: string;
  /** The tenant's webhook secret: `X-Keel-Signature: sha256=<HMAC of the body>` (none: unsigned). */
  secret?: string;
}

/** What one attempt came to: a 2xx (with its JSON body, if any), or why not. */
export type HookAnswer = { ok: true; body?: unknown } | { ok: false; error: string };

/** Sends a hook delivery; one attempt (the lane schedules retries). */
export type HookSender = (send: HookSend) => Promise<HookAnswer>;

/** Largest answer read: a `{ data }` becomes an event of the conversation, so it stays small. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * The egress-guarded sender (the policy is applied after DNS resolution on every send; redirects
 * are not followed). An answer that is not JSON is still a success: only `{ data }` is optional.
 */
export const createHookSender = (
  options: { egress?: EgressPolicy; timeoutMs?: number; fetch?: typeof fetch } = {},
): HookSender => {
  const guarded = options.fetch ?? createEgressFetch({ policy: options.egress ?? new EgressPolicy() });
  const timeoutMs = options.timeoutMs ?? 10_000;
  return async (send) => {
    try {
      const response = await guarded(send.url, {
        method: 'POST',
        body: send.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'idempotency-key': send.eventId,
          'x-keel-event': send.event,
          ...(send.secret === undefined ? {} : { 'x-keel-signature': signBody(send.secret, send.body) }),
          'user-agent': DEFAULT_USER_AGENT,
        },
      });
      if (response.status < 200 || response.status >= 300) {
        const snippet = await readSnippet(response);
        return { ok: false, error: `the hook answered ${response.status}${snippet ? `: ${snippet}` : ''}` };
      }
      return { ok: true, ...(await jsonAnswer(response)) };
    } catch (error) {
      const denied = egressDeniedIn(error);
      if (denied) return { ok: false, error: denied.message };
      if (error instanceof Error && error.name === 'TimeoutError') {
        return { ok: false, error: `the hook did not answer within ${timeoutMs} ms` };
      }
      return {
        ok: false,
        error: `the hook could not be reached: ${error instanceof Error ? error.message : 'unknown'}`,
      };
    }
  };
};

const jsonAnswer = async (response: Response): Promise<{ body?: unknown }> => {
  const { bytes, truncated } = await readBody(response, MAX_ANSWER_BYTES);
  if (truncated || bytes.length === 0) return {};
  try {
    return { body: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch {
    return {};
  }
};
