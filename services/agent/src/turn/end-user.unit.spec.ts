import { describe, expect, it } from 'vitest';
import type { AgentDefinition } from '@keel/events';
import type { Conversation } from '../conversation/conversation.state.js';
import { initialConversation } from '../conversation/conversation.state.js';
import { systemBlocks } from '../model/prompt-cache.js';
import { withFilledInstructions, withMessageContext } from './end-user-prompt.js';
import { offeredTools } from './offered-tools.js';
import type { GuardContext } from './step-policy.js';
import { judgeToolCall } from './step-policy.js';
import type { ResolvedTool } from './tool-catalog.js';

const tool = (name: string, extra: Partial<ResolvedTool> = {}): ResolvedTool => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
  approval: 'never',
  roles: [],
  phases: [],
  ...extra,
});
const lookup = tool('lookup');
const deletePage = tool('delete_page', { userRoles: ['owner', 'editor'] });
const publish = tool('publish', { phases: ['review'] });
const guard = (user: GuardContext['user'], tools = [lookup, deletePage]): GuardContext => ({
  tools,
  agent: { tools: tools.map((t) => t.name) },
  role: 'editor',
  phase: undefined,
  ...(user ? { user } : {}),
  validate: () => [],
});
const call = (name: string) => ({ toolCallId: 'k1', name, args: {} });

describe('end user: which tools a turn offers and runs', () => {
  it('offers a tool with userRoles only to a listed role (none sent: not listed), and only in its phases', () => {
    const tools = [lookup, deletePage, publish];
    const names = (user: GuardContext['user'], phase?: string) =>
      offeredTools(tools, user, phase).map((t) => t.name);
    expect(names({ id: 'u', role: 'owner' })).toEqual(['lookup', 'delete_page', 'publish']);
    expect(names({ id: 'u', role: 'viewer' })).toEqual(['lookup', 'publish']);
    expect(names({ id: 'u' })).toEqual(['lookup', 'publish']);
    expect(names({ id: 'u', role: 'owner' }, 'draft')).toEqual(['lookup', 'delete_page']);
    expect(names({ id: 'u', role: 'owner' }, 'review')).toEqual(['lookup', 'delete_page', 'publish']);
  });

  it('refuses a call to a tool the role may not use with forbidden_for_user_role, and runs it for a listed role', () => {
    expect(judgeToolCall(call('delete_page'), guard({ id: 'u', role: 'viewer' })).verdict).toMatchObject({
      kind: 'refuse',
      error: { code: 'forbidden_for_user_role' },
    });
    expect(judgeToolCall(call('delete_page'), guard(undefined)).verdict).toMatchObject({ kind: 'refuse' });
    expect(judgeToolCall(call('delete_page'), guard({ id: 'u', role: 'owner' })).verdict).toMatchObject({
      kind: 'allow',
    });
  });

  it("asks no approval of a role the policy's exceptUserRoles lists (decided by policy)", () => {
    const guarded = tool('publish_page', {
      approval: { when: { type: 'object' }, exceptUserRoles: ['owner'] },
    });
    const ctx = (role: string) => guard({ id: 'u', role }, [guarded]);
    expect(judgeToolCall(call('publish_page'), ctx('owner')).verdict).toEqual({
      kind: 'allow',
      approval: 'never',
      passedByPolicy: true,
    });
    expect(judgeToolCall(call('publish_page'), ctx('member')).verdict).toMatchObject({ approval: 'always' });
  });
});

const agent: AgentDefinition = {
  agentId: 'site',
  model: 'openai:gpt-4o-mini',
  instructions: 'Edit {{metadata.siteName}} for {{user.id}} ({{user.role}}) at {{now}}.',
  tools: [],
  maxSteps: 4,
  temperature: 0,
  toolResultMaxChars: 8000,
  options: { timeZone: 'Asia/Tokyo' },
};
const state = (context?: Record<string, unknown>): Conversation => ({
  ...initialConversation(),
  metadata: { siteName: 'Acme' },
  messages: [
    { id: 'm1', role: 'user', content: 'first', context: { page: 'old' } },
    { id: 'm2', role: 'user', content: 'now', ...(context ? { context } : {}) },
  ],
  turn: {
    turnId: 't1',
    agent: { agentId: 'site', model: 'openai:gpt-4o-mini', maxSteps: 4 },
    role: 'editor',
    step: 0,
    toolCalls: [],
    user: { id: 'ana', role: 'owner' },
    startedAt: '2026-05-01T00:30:00.000Z',
  },
});

describe('end user: the prompt', () => {
  it("fills the instructions with the conversation's metadata, the turn's user and start in the agent's zone", () => {
    expect(withFilledInstructions(agent, state()).instructions).toBe(
      'Edit Acme for ana (owner) at 2026-05-01T09:30:00+09:00.',
    );
  });

  it("adds the turn message's context in its own section after the stable prefix; none without one", () => {
    const system = { role: 'system' as const, content: '# Role\n…\n\n# Instructions\nEdit.\n\n# Tools\n- x' };
    const [withContext] = withMessageContext([system], state({ page: 'home' }));
    expect(withContext!.content).toMatch(
      /^# Role[\s\S]*# Tools\n- x\n\n# Context\n[\s\S]*\{"page":"home"\}$/,
    );
    // The cache breakpoint stays at the stable prefix: the context is in the uncached rest.
    const [stable, rest] = systemBlocks(withContext!.content);
    expect(stable).toMatchObject({ text: system.content, cache_control: { type: 'ephemeral' } });
    expect(rest?.text).toContain('{"page":"home"}');
    // The turn's message has no context: an earlier message's is not shown.
    expect(withMessageContext([system], state())).toEqual([system]);
  });
});
