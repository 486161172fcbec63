// Two agent processes share one durable consumer: both do work, and no step is acted on twice
// (each conversation's model is called exactly once per step, and each step recorded once).
import type { FakeOpenAI, ProcessHandle } from '@keel/testkit';
import { eventually, fakeReply, freePort, lastUserMessageIncludes, startFakeOpenAI } from '@keel/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationStatus, MessageRole } from '@keel/proto/keel/conversations/v1/conversations';
import { agentClient, agentConfig, conversationSteps, testCallers } from './support/agent-client.js';
import { platformEnv, startAgent, startTools } from './support/platform.js';

const { tenant, editor } = testCallers('two');
const CONVERSATIONS = 16;

describe('two agent instances', () => {
  const env = platformEnv('two_agents', { KEEL_AGENT_CONCURRENCY: '4' });
  let fake: FakeOpenAI;
  const agents: ProcessHandle[] = [];
  let tools: ProcessHandle;
  let client: ReturnType<typeof agentClient>;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    const ports = [await freePort(), await freePort()];
    agents.push(
      ...(await Promise.all(ports.map((port, i) => startAgent(env, port, fake.url, `agent-${i + 1}`)))),
    );
    tools = await startTools(env);
    client = agentClient(`127.0.0.1:${ports[0]}`);
    await client.call(
      'putAgent',
      tenant,
      agentConfig({ instructions: 'Compute.', tools: ['calculator'], maxSteps: 4 }),
    );
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await Promise.all([...agents.map((a) => a.kill('SIGTERM')), tools?.kill('SIGTERM')]);
    await fake?.close();
  });

  it('share the steps of many conversations, each step run and recorded exactly once', async () => {
    for (let i = 0; i < CONVERSATIONS; i++) {
      fake.on(
        lastUserMessageIncludes(`[c${i}]`),
        fakeReply.toolCall('calculator', { expression: `${i} * 2` }, { chunkDelayMs: 30 }),
        fakeReply.text(`The answer is ${i * 2}.`, { chunkDelayMs: 30 }),
      );
    }
    const { start, get } = conversationSteps(client, editor);
    const ids = await Promise.all(
      Array.from({ length: CONVERSATIONS }, (_, i) => start('support', `[c${i}] ${i}*2?`)),
    );
    await eventually(
      async () => {
        const views = await Promise.all(ids.map(get));
        expect(views.filter((v) => v.status !== ConversationStatus.IDLE)).toEqual([]);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    for (let i = 0; i < CONVERSATIONS; i++) {
      const view = await get(ids[i]!);
      expect(view.messages.map((m) => m.role)).toEqual([
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
      ]);
      expect(view.messages.at(-1)?.content).toBe(`The answer is ${i * 2}.`);
      // The provider saw exactly two calls for this conversation: no step ran twice.
      expect(fake.requests.filter((r) => JSON.stringify(r.body).includes(`[c${i}]`))).toHaveLength(2);
    }
    const recorded = agents.map(
      (a) => a.stdoutLines.filter((l) => l.includes('"model step recorded"')).length,
    );
    expect(recorded[0]! + recorded[1]!).toBe(2 * CONVERSATIONS);
    expect(recorded[0]).toBeGreaterThan(0);
    expect(recorded[1]).toBeGreaterThan(0);
  });
});
