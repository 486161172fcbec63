// Bad input through the running services: each gets a clear outcome the model (or the caller) can
// read, and the conversation stays consistent (the turn ends, every tool call has one result).
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { fakeReply, freePort, lastUserMessageIncludes, startFakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Conversation } from '@keel/proto/keel/conversations/v1/conversations';
import { ConversationStatus, Decision, MessageRole } from '@keel/proto/keel/conversations/v1/conversations';
import {
  agentClient,
  agentConfig,
  conversationSteps,
  testCallers,
  webhookTool,
} from './support/agent-client.js';
import { platformEnv, startAgent, startTools } from './support/platform.js';
import type { WebhookServer } from './support/webhook-server.js';
import { startWebhookServer } from './support/webhook-server.js';

const { tenant, editor } = testCallers('bad');

describe('bad input, end to end', () => {
  const env = platformEnv('bad_input');
  let fake: FakeOpenAI;
  let webhook: WebhookServer;
  let processes: ProcessHandle[] = [];
  let client: ReturnType<typeof agentClient>;
  let steps: ReturnType<typeof conversationSteps>;

  const get = (id: string) => steps.get(id);
  const turn = (content: string) => steps.start('support', content);
  const settled = async (id: string, status: ConversationStatus = ConversationStatus.IDLE) => {
    await steps.waitStatus(id, status);
    return get(id);
  };
  const toolResult = (view: Conversation) =>
    view.messages.find((m) => m.role === MessageRole.TOOL)?.content ?? '';

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    webhook = await startWebhookServer();
    const port = await freePort();
    processes = await Promise.all([startAgent(env, port, fake.url), startTools(env)]);
    client = agentClient(`127.0.0.1:${port}`);
    steps = conversationSteps(client, editor);
    webhook.setSecret((await client.call('rotateWebhookSecret', tenant)).secret);
    const schema = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] };
    for (const [name, approval] of [
      ['lookup_order', 'never'],
      ['refund', 'always'],
    ] as const) {
      await client.call(
        'putTool',
        tenant,
        webhookTool({
          name,
          description: name,
          inputSchema: schema,
          url: webhook.url,
          approval,
          timeoutMs: 500,
        }),
      );
    }
    await client.call(
      'putAgent',
      tenant,
      agentConfig({ instructions: 'Help.', tools: ['lookup_order', 'refund'], maxSteps: 4 }),
    );
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await Promise.all(processes.map((p) => p.kill('SIGTERM')));
    await fake?.close();
    await webhook?.close();
  });

  it('invalid arguments from the model never reach the webhook; the model reads why', async () => {
    fake.on(
      lastUserMessageIncludes('[b1]'),
      fakeReply.toolCall('lookup_order', { id: 42 }),
      fakeReply.text('Sorry.'),
    );
    const id = await turn('[b1] look up 42');
    const view = await settled(id);
    expect(toolResult(view)).toContain('invalid_arguments');
    expect(webhook.hits.filter((h) => h.body.conversationId === id)).toEqual([]);
  });

  it('a webhook answering 500 three times, a non-JSON body, and a timeout are tool errors; the turn completes', async () => {
    for (const [marker, orderId, code] of [
      ['[b2]', 'fail-1', 'webhook_status_500'],
      ['[b3]', 'text-1', 'webhook_invalid_json'],
      ['[b4]', 'slow-1', 'webhook_timeout'],
    ] as const) {
      fake.on(
        lastUserMessageIncludes(marker),
        fakeReply.toolCall('lookup_order', { id: orderId }),
        fakeReply.text('Noted.'),
      );
      const id = await turn(`${marker} look up ${orderId}`);
      const view = await settled(id);
      expect(toolResult(view)).toContain(code);
      expect(view.messages.at(-1)?.content).toBe('Noted.');
      const hits = webhook.hits.filter((h) => h.body.conversationId === id);
      // 5xx and timeouts are retried (3 attempts, one Idempotency-Key); a 2xx that is not JSON is not.
      expect(hits).toHaveLength(code === 'webhook_invalid_json' ? 1 : 3);
      expect(new Set(hits.map((h) => h.key)).size).toBe(1);
    }
  });

  it('an approval decided twice is a conflict, and an unknown one is not found; the first decision stands', async () => {
    fake.on(
      lastUserMessageIncludes('[b5]'),
      fakeReply.toolCall('refund', { id: 'R-5' }),
      fakeReply.text('Done.'),
    );
    const id = await turn('[b5] refund R-5');
    const [approval] = (await settled(id, ConversationStatus.AWAITING_APPROVAL)).pendingApprovals;
    const decide = (approvalId: string, decision: Decision) =>
      client.call('decideApproval', editor, { request: { conversationId: id, approvalId, decision } });
    await decide(approval!.approvalId, Decision.DENY);
    await expect(decide(approval!.approvalId, Decision.APPROVE)).rejects.toMatchObject({ code: 10 }); // ABORTED
    await expect(decide('no-such-approval', Decision.APPROVE)).rejects.toMatchObject({ code: 5 }); // NOT_FOUND
    const view = await settled(id);
    expect(toolResult(view)).toContain('denied by ana');
    expect(webhook.hits.filter((h) => h.body.conversationId === id)).toEqual([]);
  });

  it('cancelling an idle conversation is a conflict and changes nothing', async () => {
    fake.on(lastUserMessageIncludes('[b6]'), fakeReply.text('Hello.'));
    const id = await turn('[b6] hi');
    const before = await settled(id);
    await expect(
      client.call('cancelTurn', editor, { request: { conversationId: id } }),
    ).rejects.toMatchObject({
      code: 10,
    });
    expect(await get(id)).toEqual(before);
  });
});
