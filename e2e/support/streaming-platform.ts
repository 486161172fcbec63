// A platform for the turn stream end-to-end tests: an agent, a tools service and two gateway
// processes on one environment, the fake OpenAI server as the model, the webhook server as the
// tool; one tenant with an admin and an editor key, a `refund` webhook tool that needs approval
// and a `support` agent using it. Plus the HTTP and SSE helpers the tests share.
import type { SseFrame } from '@keel/testkit';
import { openSse } from '@keel/testkit';
import { expect } from 'vitest';
import { startGatewayPlatform } from './gateway-platform.js';
import { gatewayRequest, jsonOf, openTurnStream } from './http.js';

/** Whether a frame is an ephemeral one (`message.delta`, `context`: id `<version>.<seq>`). */
export const isDelta = (frame: SseFrame): boolean => frame.id!.includes('.');

/** The turn a frame names (undefined for `approval.decided`). */
export const turnOf = (frame: SseFrame): string | undefined => (frame.data as { turnId?: string }).turnId;

/** Starts the processes and configures the tenant; `stop` ends them all. */
export const startStreamingPlatform = async (name: string) => {
  const platform = await startGatewayPlatform(name, {
    env: { KEEL_SSE_HEARTBEAT_MS: '500' },
    gateways: ['gateway-a', 'gateway-b'],
  });
  const { fake, webhook, stop } = platform;
  const [baseA, baseB] = platform.gateways.map((g) => g.base) as [string, string];
  const keys = { admin: '', editor: '' };

  const post = (
    base: string,
    path: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => gatewayRequest(base, 'POST', path, key, body, headers);
  const json = jsonOf;

  /** Streams a message (`Accept: text/event-stream`) on gateway `base` with the editor key. */
  const streamMessage = (
    base: string,
    conversationId: string,
    body: string | Record<string, unknown>,
    headers: Record<string, string> = {},
  ) =>
    openTurnStream(
      base,
      keys.editor,
      conversationId,
      typeof body === 'string' ? { content: body } : body,
      headers,
    );

  /** Opens a conversation with the `support` agent; its id. */
  const conversation = async () => {
    const created = await post(baseA, '/v1/conversations', keys.editor, { agentId: 'support' });
    expect(created.status).toBe(201);
    return (await json(created)).id as string;
  };

  /** The conversation's durable frames from the log (events feed on `base`), read until `last` arrives. */
  const logFrames = async (base: string, conversationId: string, last: (f: SseFrame) => boolean) => {
    const feed = await openSse(`${base}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${keys.editor}` },
    });
    const frames = await feed.until(last);
    feed.close();
    return frames.filter((f) => !isDelta(f));
  };

  Object.assign(keys, (await platform.tenantWithKeys('Acme', ['admin', 'editor'] as const)).keys);
  await platform.configureSupportAgent(keys.admin);

  return { baseA, baseB, keys, fake, webhook, post, json, streamMessage, conversation, logFrames, stop };
};

/** A running streaming platform and its helpers. */
export type StreamingPlatform = Awaited<ReturnType<typeof startStreamingPlatform>>;
