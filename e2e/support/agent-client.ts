// A typed client of keel.agent.v1.AgentService (the generated messages) for end-to-end tests,
// plus the callers and the conversation steps the agent-level tests share.
import type { AgentCallRequest, AgentResponseOf, AgentRpc } from '@keel/gateway/agent-client';
import { callAgentRpc } from '@keel/gateway/agent-client';
import type { Conversation, ConversationStatus } from '@keel/proto/keel/conversations/v1/conversations';
import { GrpcClient } from '@keel/runtime';
import { eventually, uniqueName } from '@keel/testkit';
import { expect } from 'vitest';

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

/**
 * A typed AgentService client on the generated definition (the gateway's callAgentRpc, without
 * its error mapping: a failed call rejects with the grpc-js ServiceError and its numeric code);
 * every call takes the caller it acts for, and its request and answer are the generated messages.
 */
export const agentClient = (address: string) => {
  const client = new GrpcClient(address, { deadlineMs: 10_000 });
  const call = <R extends AgentRpc>(
    rpc: R,
    caller: TestCaller,
    request: AgentCallRequest<R> = {} as AgentCallRequest<R>,
  ): Promise<AgentResponseOf<R>> => {
    const context = {
      tenantId: caller.tenantId,
      actor: {
        keyId: `key-${caller.role ?? 'admin'}`,
        role: caller.role ?? 'admin',
        userId: caller.userId ?? 'tester',
      },
      correlationId: `e2e-${rpc}-${Date.now()}`,
    };
    return callAgentRpc(client, rpc, { ...(request as object), context } as never);
  };
  return { call, close: () => client.close() };
};

/** An AgentService client. */
export type AgentClient = ReturnType<typeof agentClient>;

/**
 * The conversation steps of agent-level tests, as `caller`: `start` opens a conversation with an
 * agent and submits a message (its id), `get` reads its view, `waitStatus` waits for a status.
 */
export const conversationSteps = (client: AgentClient, caller: TestCaller) => {
  const start = async (agentId: string, content: string): Promise<string> => {
    const { conversation } = await client.call('createConversation', caller, { request: { agentId } });
    const id = conversation?.id ?? '';
    await client.call('submitMessage', caller, { request: { conversationId: id, content } });
    return id;
  };
  const get = async (id: string): Promise<Conversation> => {
    const { conversation } = await client.call('getConversation', caller, {
      request: { conversationId: id },
    });
    if (!conversation) throw new Error(`GetConversation ${id} answered no conversation`);
    return conversation;
  };
  const waitStatus = (id: string, status: ConversationStatus, timeoutMs = 30_000) =>
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
