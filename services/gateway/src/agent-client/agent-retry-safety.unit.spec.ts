import { describe, expect, it } from 'vitest';
import { agentCallRetrySafe } from './agent-retry-safety.js';

const path = (rpc: string) => `/keel.agent.v1.AgentService/${rpc}`;

describe('agentCallRetrySafe', () => {
  it('repeats reads on another agent instance', () => {
    for (const rpc of ['GetConversation', 'ListConversations', 'ListTools', 'GetAgent', 'ListAgents']) {
      expect(agentCallRetrySafe(path(rpc), { request: {} })).toBe(true);
    }
  });

  it('repeats a keyed write only with its Idempotency-Key (the log answers the repeat)', () => {
    for (const rpc of ['SubmitMessage', 'CreateConversation', 'DecideApproval', 'CancelTurn']) {
      expect(agentCallRetrySafe(path(rpc), { request: { idempotencyKey: 'k-1' } })).toBe(true);
      expect(agentCallRetrySafe(path(rpc), { request: { idempotencyKey: '' } })).toBe(false);
      expect(agentCallRetrySafe(path(rpc), { request: {} })).toBe(false);
    }
  });

  it('never repeats a write that holds no key', () => {
    for (const rpc of ['PutTool', 'PutAgent', 'PutProvider', 'RotateWebhookSecret', 'Unknown']) {
      expect(agentCallRetrySafe(path(rpc), { request: { idempotencyKey: 'k-1' } })).toBe(false);
    }
  });
});
