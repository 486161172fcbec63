// The turn stream over HTTP (POST …/messages with Accept: text/event-stream), with the gateway,
// the agent and the tools service as separate processes on real NATS and MongoDB, the model
// played by the fake OpenAI server and the tool by the e2e webhook server. A streamed turn with
// deltas pauses for approval, is approved from another connection and runs on to turn.completed
// on the same stream; a retry with the same Idempotency-Key starts no second turn; a client that
// disconnects mid-turn resumes on a second gateway process with Last-Event-ID, missing nothing; a
// message sent with ifBusy: enqueue stays out of the running turn's model calls (and of GET's
// messages) until its own turn starts after that one.
import type { SseFrame } from '@keel/testkit';
import { fakeReply, lastUserMessageIncludes, openSse } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVED_TOOL_TURN } from './support/gateway-platform.js';
import type { StreamingPlatform } from './support/streaming-platform.js';
import { isDelta, startStreamingPlatform, turnOf } from './support/streaming-platform.js';

describe('the turn stream (gateway, agent, tools as processes)', () => {
  let platform: StreamingPlatform;

  beforeAll(async () => {
    platform = await startStreamingPlatform('turnstream');
  }, 180_000);

  afterAll(async () => {
    await platform?.stop();
  });

  let streamedConversation = '';
  let streamedTurn = '';
  let streamedFrames: SseFrame[] = [];

  it('streams a turn with deltas, stays open through the approval decided on another connection, and ends after turn.completed', async () => {
    const { baseA, baseB, keys, fake, post, streamMessage, conversation, logFrames } = platform;
    fake.on(
      lastUserMessageIncludes('refund B-2'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'B-2' } }], {
        text: 'Let me refund that.',
        chunkSize: 5,
      }),
      fakeReply.text('Refunded B-2 for you.', { chunkSize: 4 }),
    );
    const conversationId = await conversation();
    const stream = await streamMessage(baseA, conversationId, 'Please refund B-2', {
      'idempotency-key': 'send-1',
      'x-request-id': 'req-stream-1',
    });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.response.headers.get('x-request-id')).toBe('req-stream-1');

    const paused = await stream.until((f) => f.event === 'approval.required');
    const turnId = turnOf(paused[0]!)!;
    expect(paused[0]).toMatchObject({ event: 'turn.started', data: { turnId } });
    const approval = paused.at(-1)!.data as { approvalId: string; name: string; args: unknown };
    expect(approval).toMatchObject({ turnId, name: 'refund', args: { id: 'B-2' } });
    // Paused: the stream stays open (heartbeats only) and nothing more comes until a decision.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(
      stream.events().filter((f) => !isDelta(f)),
      JSON.stringify(stream.events()),
    ).toEqual(paused.filter((f) => !isDelta(f)));
    expect(stream.frames.some((f) => f.comment === 'ping')).toBe(true);

    const decided = await post(
      baseA,
      `/v1/conversations/${conversationId}/approvals/${approval.approvalId}`,
      keys.editor,
      {
        decision: 'approve',
      },
    );
    expect(decided.status).toBe(200);
    await stream.ended;
    const frames = stream.events();
    expect(frames.at(-1)).toEqual({
      id: expect.any(String),
      event: 'turn.completed',
      data: { turnId, finishReason: 'stop', affected: [] },
    });
    expect(frames.filter((f) => !isDelta(f)).map((f) => f.event)).toEqual(APPROVED_TOOL_TURN);
    // Every frame is this turn's; the deltas spell the messages, with version.seq ids.
    expect(frames.filter((f) => f.event !== 'approval.decided').every((f) => turnOf(f) === turnId)).toBe(
      true,
    );
    const deltas = frames.filter((f) => f.event === 'message.delta');
    expect(deltas.every((f) => /^\d+\.\d+$/.test(f.id!))).toBe(true);
    expect(deltas.map((f) => (f.data as { text: string }).text).join('')).toBe(
      'Let me refund that.Refunded B-2 for you.',
    );
    expect(frames.find((f) => f.event === 'tool.result')?.data).toMatchObject({ ok: true, name: 'refund' });
    // The durable frames are exactly the log's, as the events feed serves them.
    const durable = frames.filter((f) => !isDelta(f));
    expect(await logFrames(baseB, conversationId, (f) => f.event === 'turn.completed')).toEqual(durable);
    streamedConversation = conversationId;
    streamedTurn = turnId;
    streamedFrames = durable;
  });

  it('a retry with the same Idempotency-Key starts no second turn: it streams the first turn again, or answers its id', async () => {
    const { baseA, baseB, keys, fake, webhook, post, json, streamMessage } = platform;
    const requests = fake.requests.length;
    const hits = webhook.hits.length;
    const again = await streamMessage(baseB, streamedConversation, 'Please refund B-2', {
      'idempotency-key': 'send-1',
    });
    expect(again.response.status).toBe(200);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    await again.ended;
    expect(again.events().filter((f) => !isDelta(f))).toEqual(streamedFrames);

    const plain = await post(
      baseA,
      `/v1/conversations/${streamedConversation}/messages`,
      keys.editor,
      { content: 'Please refund B-2' },
      {
        'idempotency-key': 'send-1',
      },
    );
    expect(plain.status).toBe(202);
    expect(await json(plain)).toEqual({ turnId: streamedTurn });

    const other = await post(
      baseA,
      `/v1/conversations/${streamedConversation}/messages`,
      keys.editor,
      { content: 'Something else' },
      {
        'idempotency-key': 'send-1',
      },
    );
    expect(other.status).toBe(409);
    expect(await json(other)).toMatchObject({
      code: 'conflict',
      detail: expect.stringContaining('Idempotency-Key'),
    });

    const state = await json(
      await fetch(`${baseA}/v1/conversations/${streamedConversation}`, {
        headers: { authorization: `Bearer ${keys.editor}` },
      }),
    );
    expect((state.messages as Array<{ role: string }>).filter((m) => m.role === 'user')).toHaveLength(1);
    expect(fake.requests.length).toBe(requests);
    expect(webhook.hits.length).toBe(hits);
  });

  it("a message enqueued behind a running turn is not in that turn's model calls, and streams its own turn once the first one completes", async () => {
    const { baseA, baseB, keys, fake, post, json, streamMessage, conversation } = platform;
    fake.on(
      lastUserMessageIncludes('refund Q-7'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'Q-7' } }]),
      fakeReply.text('Refunded Q-7.', { chunkSize: 4 }),
    );
    fake.on(lastUserMessageIncludes('and thanks'), fakeReply.text('You are welcome.', { chunkSize: 4 }));
    const conversationId = await conversation();
    // The first turn pauses for approval: it runs on (one model call made, one to come).
    const first = await streamMessage(baseA, conversationId, 'Please refund Q-7');
    const seen = await first.until((f) => f.event === 'approval.required');
    const firstTurn = turnOf(seen[0]!)!;
    const approvalId = (seen.at(-1)!.data as { approvalId: string }).approvalId;

    const queued = await streamMessage(baseB, conversationId, { content: 'and thanks', ifBusy: 'enqueue' });
    expect(queued.response.status).toBe(200);
    // The first turn still runs: the queued stream is open, with heartbeats and no frame, and the
    // queued message is not part of the conversation's messages yet.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(queued.events()).toEqual([]);
    expect(queued.frames.some((f) => f.comment === 'ping')).toBe(true);
    const get = (base: string) =>
      fetch(`${base}/v1/conversations/${conversationId}`, {
        headers: { authorization: `Bearer ${keys.editor}` },
      });
    const waiting = await json(await get(baseA));
    expect(waiting.status).toBe('awaiting_approval');
    expect((waiting.messages as Array<{ content: string }>).map((m) => m.content)).not.toContain(
      'and thanks',
    );

    const approved = await post(
      baseA,
      `/v1/conversations/${conversationId}/approvals/${approvalId}`,
      keys.editor,
      {
        decision: 'approve',
      },
    );
    expect(approved.status).toBe(200);
    await Promise.all([first.ended, queued.ended]);
    const firstFrames = first.events().filter((f) => !isDelta(f));
    expect(firstFrames.at(-1)).toMatchObject({ event: 'turn.completed', data: { turnId: firstTurn } });
    // The first turn's second model call answered its own question, not the queued one.
    expect(firstFrames.filter((f) => f.event === 'message.completed').at(-1)?.data).toMatchObject({
      text: 'Refunded Q-7.',
    });
    const second = queued.events();
    const secondTurn = turnOf(second[0]!)!;
    expect(secondTurn).not.toBe(firstTurn);
    expect(second.every((f) => turnOf(f) === secondTurn)).toBe(true);
    expect(second.filter((f) => !isDelta(f)).map((f) => f.event)).toEqual([
      'turn.started',
      'message.completed',
      'usage',
      'turn.completed',
    ]);
    expect(second.find((f) => f.event === 'message.completed')?.data).toMatchObject({
      text: 'You are welcome.',
    });
    // Each stream holds its own turn only (approval.decided names no turn).
    expect(first.events().every((f) => f.event === 'approval.decided' || turnOf(f) === firstTurn)).toBe(true);

    // What the model was sent: the queued message only in the queued turn's call, after the first turn.
    const userTexts = (r: (typeof fake.requests)[number]) =>
      (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
    const calls = fake.requests.filter((r) => userTexts(r).some((t) => t.includes('refund Q-7')));
    expect(calls.map((r) => userTexts(r))).toEqual([
      ['Please refund Q-7'],
      ['Please refund Q-7'],
      ['Please refund Q-7', 'and thanks'],
    ]);
    expect(calls[2]!.body?.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    const done = await json(await get(baseB));
    expect(
      (done.messages as Array<{ role: string; content: string }>).map((m) => [m.role, m.content]),
    ).toEqual([
      ['user', 'Please refund Q-7'],
      ['assistant', ''],
      ['tool', expect.any(String)],
      ['assistant', 'Refunded Q-7.'],
      ['user', 'and thanks'],
      ['assistant', 'You are welcome.'],
    ]);
  });

  it('errors come before the stream as problem+json: unknown conversation 404, bad body 400', async () => {
    const { baseA, keys, post, json, streamMessage } = platform;
    const unknown = await streamMessage(baseA, 'nope', 'hi');
    expect(unknown.response.status).toBe(404);
    expect(unknown.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await unknown.response.json()).toMatchObject({ code: 'not_found' });
    const bad = await post(
      baseA,
      `/v1/conversations/${streamedConversation}/messages`,
      keys.editor,
      { content: 7 },
      {
        accept: 'text/event-stream',
      },
    );
    expect(bad.status).toBe(400);
    expect(await json(bad)).toMatchObject({
      code: 'invalid_request',
      detail: expect.stringContaining('content'),
    });
  });

  it('a client that disconnects mid-turn does not stop it, and resumes on a second gateway with Last-Event-ID: exactly the missed events', async () => {
    const { baseA, baseB, keys, fake, webhook, post, streamMessage, conversation, logFrames } = platform;
    fake.on(
      lastUserMessageIncludes('refund C-3'),
      fakeReply.toolCalls([{ name: 'refund', arguments: { id: 'C-3' } }], { text: 'One moment.' }),
      fakeReply.text('Refunded C-3, all done now.', { chunkSize: 3, chunkDelayMs: 30 }),
    );
    const conversationId = await conversation();
    const stream = await streamMessage(baseA, conversationId, 'Please refund C-3', {
      'idempotency-key': 'send-c3',
    });
    const seen = await stream.until((f) => f.event === 'approval.required');
    const approvalId = (seen.at(-1)!.data as { approvalId: string }).approvalId;
    stream.close();
    await stream.ended;
    const lastSeen = seen.at(-1)!.id!;

    // Decided on gateway B while no stream is open; the turn runs to its end without a reader.
    expect(
      (
        await post(baseB, `/v1/conversations/${conversationId}/approvals/${approvalId}`, keys.editor, {
          decision: 'approve',
        })
      ).status,
    ).toBe(200);
    const full = await logFrames(baseB, conversationId, (f) => f.event === 'turn.completed');

    const resumed = await openSse(`${baseB}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${keys.editor}`, 'last-event-id': lastSeen },
    });
    expect(resumed.response.status).toBe(200);
    const after = (await resumed.until((f) => f.event === 'turn.completed')).filter((f) => !isDelta(f));
    await new Promise((resolve) => setTimeout(resolve, 500));
    resumed.close();
    expect(resumed.events().filter((f) => !isDelta(f))).toEqual(after);
    expect(after.map((f) => f.event)).toEqual([
      'approval.decided',
      'tool.result',
      'message.completed',
      'usage',
      'turn.completed',
    ]);
    // No gap, no duplicate: what A sent plus what B sent is the log.
    expect([...seen.filter((f) => !isDelta(f)), ...after]).toEqual(full);
    expect(webhook.hits.filter((h) => h.body.conversationId === conversationId)).toHaveLength(1);

    // The turn stream itself resumes the same way: the retried POST with Last-Event-ID, on B.
    const again = await streamMessage(baseB, conversationId, 'Please refund C-3', {
      'idempotency-key': 'send-c3',
      'last-event-id': lastSeen,
    });
    expect(again.response.status).toBe(200);
    await again.ended;
    expect(again.events().filter((f) => !isDelta(f))).toEqual(after);
  });
});
