// The turn loop, end to end: the agent and tools services as separate processes on real
// NATS and FerretDB, the real @langchain/openai client against the test kit's fake provider, and a
// webhook that counts its effects per Idempotency-Key. Processes are SIGKILLed at the moments that
// matter; every turn still completes and every tool call's effect happens once.
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes, startFakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const { tenant, editor } = testCallers('e2e');

describe('a turn that survives anything (agent and tools as separate processes)', () => {
  const env = platformEnv('turns', { KEEL_AGENT_ACK_WAIT_MS: '3000', KEEL_TOOLS_ACK_WAIT_MS: '3000' });
  let fake: FakeOpenAI;
  let webhook: WebhookServer;
  let agentPort: number;
  let agent: ProcessHandle;
  let tools: ProcessHandle;
  let client: ReturnType<typeof agentClient>;
  let steps: ReturnType<typeof conversationSteps>;

  const restartAgent = () => startAgent(env, agentPort, fake.url);
  const get = (id: string) => steps.get(id);
  const open = (content: string) => steps.start('support', content);
  const waitStatus = (id: string, status: ConversationStatus, timeoutMs = 30_000) =>
    steps.waitStatus(id, status, timeoutMs);

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    webhook = await startWebhookServer();
    agentPort = await freePort();
    [agent, tools] = await Promise.all([restartAgent(), startTools(env)]);
    client = agentClient(`127.0.0.1:${agentPort}`);
    steps = conversationSteps(client, editor);
    const { secret } = await client.call('rotateWebhookSecret', tenant);
    webhook.setSecret(secret);
    const schema = {
      type: 'object',
      properties: { id: { type: 'string' }, amount: { type: 'number' } },
      required: ['id'],
    };
    for (const [name, approval] of [
      ['lookup_order', 'never'],
      ['refund', 'always'],
    ] as const) {
      const description = `${name} of an order`;
      await client.call(
        'putTool',
        tenant,
        webhookTool({
          name,
          description,
          inputSchema: schema,
          url: webhook.url,
          approval,
          timeoutMs: 20_000,
        }),
      );
    }
    await client.call(
      'putAgent',
      tenant,
      agentConfig({
        instructions: 'Help with orders.',
        tools: ['lookup_order', 'refund', 'calculator'],
        maxSteps: 6,
      }),
    );
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await Promise.all([agent?.kill('SIGTERM'), tools?.kill('SIGTERM')]);
    await fake?.close();
    await webhook?.close();
  });

  it('runs two tool calls (a webhook and a built-in) to completion; the rebuilt conversation holds them all', async () => {
    fake.on(
      lastUserMessageIncludes('[s1]'),
      fakeReply.toolCalls([
        { name: 'lookup_order', arguments: { id: 'A-1' } },
        { name: 'calculator', arguments: { expression: '19.99 * 3' } },
      ]),
      fakeReply.text('Order A-1 shipped; three cost 59.97.'),
    );
    const id = await open('[s1] where is A-1, and what do three cost?');
    await waitStatus(id, ConversationStatus.IDLE);
    const view = await get(id);
    expect(view.messages.map((m) => m.role)).toEqual([
      MessageRole.USER,
      MessageRole.ASSISTANT,
      MessageRole.TOOL,
      MessageRole.TOOL,
      MessageRole.ASSISTANT,
    ]);
    const results = view.messages.filter((m) => m.role === MessageRole.TOOL).map((m) => m.content);
    expect(results.some((r) => r.includes('"status":"shipped"'))).toBe(true);
    expect(results.some((r) => r.includes('59.97'))).toBe(true);
    expect(view.messages.at(-1)?.content).toBe('Order A-1 shipped; three cost 59.97.');
    const hits = webhook.hits.filter((h) => h.body.conversationId === id);
    expect(hits).toHaveLength(1);
    expect(hits[0]!.signatureValid).toBe(true);
    // What the model was sent on its second call: both tool results, answering its own call ids.
    const second = fake.requests.filter((r) => JSON.stringify(r.body).includes('[s1]'))[1]!;
    expect((second.body?.messages as Array<{ role: string }>).map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
    ]);
  });

  it('SIGKILL of the agent while awaiting approval: after a restart the approval releases the call, once', async () => {
    fake.on(
      lastUserMessageIncludes('[s2]'),
      fakeReply.toolCall('refund', { id: 'B-2', amount: 20 }),
      fakeReply.text('Refunded 20 on B-2.'),
    );
    const id = await open('[s2] refund 20 on B-2');
    await waitStatus(id, ConversationStatus.AWAITING_APPROVAL);
    await agent.kill('SIGKILL');
    agent = await restartAgent();
    const [approval] = (await get(id)).pendingApprovals;
    expect(approval?.tool).toBe('refund');
    await client.call('decideApproval', editor, {
      request: { conversationId: id, approvalId: approval!.approvalId, decision: Decision.APPROVE },
    });
    await waitStatus(id, ConversationStatus.IDLE);
    const hits = webhook.hits.filter((h) => h.body.conversationId === id);
    expect(hits.map((h) => h.key)).toHaveLength(1);
    expect(webhook.effects.get(hits[0]!.key)).toBe(1);
    expect((await get(id)).messages.at(-1)?.content).toBe('Refunded 20 on B-2.');
  });

  it('SIGKILL of the agent after a tool call was requested and before its result: the turn completes', async () => {
    fake.on(
      lastUserMessageIncludes('[s3]'),
      fakeReply.toolCall('lookup_order', { id: 'C-3' }),
      fakeReply.text('C-3 is on its way.'),
    );
    webhook.hold(2_000);
    const id = await open('[s3] where is C-3?');
    await eventually(() => expect(webhook.hits.some((h) => h.body.conversationId === id)).toBe(true), {
      timeoutMs: 30_000,
    });
    await agent.kill('SIGKILL');
    webhook.hold(0);
    agent = await restartAgent();
    await waitStatus(id, ConversationStatus.IDLE);
    const keys = webhook.hits.filter((h) => h.body.conversationId === id).map((h) => h.key);
    expect(new Set(keys).size).toBe(1);
    expect(webhook.effects.get(keys[0]!)).toBe(1);
    expect((await get(id)).messages.at(-1)?.content).toBe('C-3 is on its way.');
  });

  it('SIGKILL of the agent in the middle of a streamed model response: the step is redone and the turn completes', async () => {
    fake.on(
      lastUserMessageIncludes('[s4]'),
      fakeReply.text('This answer streams slowly and will be cut off by the kill.', {
        chunkSize: 2,
        chunkDelayMs: 200,
      }),
      fakeReply.text('Here is the full answer.'),
    );
    const id = await open('[s4] tell me slowly');
    const index = await eventually(
      () => {
        const found = fake.requests.findIndex((r) => JSON.stringify(r.body).includes('[s4]'));
        expect(found).toBeGreaterThanOrEqual(0);
        return found;
      },
      { timeoutMs: 30_000 },
    );
    await new Promise((r) => setTimeout(r, 600)); // mid-stream
    await agent.kill('SIGKILL');
    expect((await fake.waitForClientClose(index, 5_000)).closedByClient).toBe(true);
    agent = await restartAgent();
    await waitStatus(id, ConversationStatus.IDLE, 60_000);
    const view = await get(id);
    expect(view.messages.map((m) => m.content)).toEqual(['[s4] tell me slowly', 'Here is the full answer.']);
  });
});
