// A grpc-js client of keel.agent.v1.AgentService for end-to-end tests, promise-based, plus the
// callers and the conversation steps the agent-level tests share.
import { eventually, uniqueName } from '@keel/testkit';
import { expect } from 'vitest';
import { grpcClient } from './grpc-client.js';

/** The caller identity the gateway would send with each internal call. */
export interface TestCaller {
  tenantId: string;
  role?: 'admin' | 'editor' | 'viewer';
  userId?: string;
}

/** A fresh tenant's admin caller (`tenant`) and an editor of it, user `ana` (`editor`). */
export const testCallers = (prefix: string): { tenant: TestCaller; editor: TestCaller } => {
  const tenant: TestCaller = { tenantId: uniqueName(prefix).slice(0, 40), role: 'admin' };
  return { tenant, editor: { ...tenant, role: 'editor', userId: 'ana' } };
};

/** A promise-based AgentService client; every call takes the caller it acts for. */
export const agentClient = (address: string) => {
  const client = grpcClient(address, 'keel/agent/v1/agent.proto', 'agent.v1.AgentService');
  const call = <T = Record<string, unknown>>(
    method: string,
    caller: TestCaller,
    request: object = {},
  ): Promise<T> => {
    const context = {
      tenantId: caller.tenantId,
      actor: {
        keyId: `key-${caller.role ?? 'admin'}`,
        role: caller.role ?? 'admin',
        userId: caller.userId ?? 'tester',
      },
      correlationId: `e2e-${method}-${Date.now()}`,
    };
    return client.unary<T>(method, undefined, { context, ...request });
  };
  return { call, close: client.close };
};

/** An AgentService client. */
export type AgentClient = ReturnType<typeof agentClient>;

/**
 * The conversation steps of agent-level tests, as `caller`: `start` opens a conversation with an
 * agent and submits a message (its id), `get` reads its view, `waitStatus` waits for a status.
 */
export const conversationSteps = <View = Record<string, unknown>>(
  client: AgentClient,
  caller: TestCaller,
) => {
  const start = async (agentId: string, content: string): Promise<string> => {
    const { conversation } = await client.call<{ conversation: { id: string } }>(
      'createConversation',
      caller,
      {
        request: { agentId },
      },
    );
    await client.call('submitMessage', caller, { request: { conversationId: conversation.id, content } });
    return conversation.id;
  };
  const get = async (id: string): Promise<View & { status: string }> =>
    (
      await client.call<{ conversation: View & { status: string } }>('getConversation', caller, {
        request: { conversationId: id },
      })
    ).conversation;
  const waitStatus = (id: string, status: string, timeoutMs = 30_000) =>
    eventually(async () => expect((await get(id)).status).toBe(status), { timeoutMs, intervalMs: 100 });
  return { start, get, waitStatus };
};

/** A webhook tool as AgentService.PutTool takes it, with no role or phase limits. */
export const webhookTool = (tool: {
  name: string;
  description: string;
  inputSchema: object;
  url: string;
  approval: 'never' | 'always';
  timeoutMs: number;
}) => ({
  tool: {
    name: tool.name,
    description: tool.description,
    inputSchemaJson: JSON.stringify(tool.inputSchema),
    kind: 'webhook',
    url: tool.url,
    approval: tool.approval,
    roles: [],
    phases: [],
    timeoutMs: tool.timeoutMs,
  },
});

/** An agent as AgentService.PutAgent takes it: `support` on openai:gpt-4o-mini, temperature 0, unless given. */
export const agentConfig = (agent: {
  instructions: string;
  tools: string[];
  maxSteps: number;
  agentId?: string;
  model?: string;
}) => ({
  agent: {
    agentId: 'support',
    model: 'openai:gpt-4o-mini',
    temperature: 0,
    toolResultMaxChars: 2000,
    ...agent,
  },
});
