import { ValidationError } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import { describe, expect, it } from 'vitest';
import { approvalForParent, childOutcomeOf, childrenToCancel, endsFirstTurn } from './sub-agent-policy.js';
import {
  checkSubAgents,
  childConversationIdOf,
  cycleThrough,
  judgeSubAgentCall,
  subAgentTools,
} from './sub-agent-rules.js';

const agent = (agentId: string, agents: string[] = [], maxDepth?: number): AgentDefinition => ({
  agentId,
  model: 'openai:gpt-4o-mini',
  instructions: `I am ${agentId}.`,
  tools: [],
  maxSteps: 4,
  temperature: 0,
  toolResultMaxChars: 4000,
  options: { agents, ...(maxDepth === undefined ? {} : { maxDepth }) },
});
const byId = (...agents: AgentDefinition[]) => Object.fromEntries(agents.map((a) => [a.agentId, a]));

describe('sub-agent rules', () => {
  it('offers each listed agent as agent__<id> with input { task }, skipping one that is gone', () => {
    const tools = subAgentTools(['researcher', 'ghost', 'researcher'], byId(agent('researcher')));
    expect(tools.map((t) => t.name)).toEqual(['agent__researcher']);
    expect(tools[0]!.inputSchema).toMatchObject({ required: ['task'] });
    expect(tools[0]!.description).not.toContain('I am researcher.');
  });

  it('finds the cycle a definition would close, as its path; none for a tree', () => {
    const agents = byId(agent('a'), agent('b', ['a']), agent('c', ['b']));
    expect(cycleThrough(agent('a', ['c']), agents)).toEqual(['a', 'c', 'b', 'a']);
    expect(cycleThrough(agent('a', ['a']), agents)).toEqual(['a', 'a']);
    expect(cycleThrough(agent('d', ['b', 'c']), agents)).toBeUndefined();
  });

  it('refuses at PUT a cycle naming the path, an unknown agent, a repeat and a bad maxDepth', () => {
    const agents = byId(agent('a'), agent('b', ['a']));
    const problem = (a: AgentDefinition) => {
      try {
        checkSubAgents(a, agents);
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).message;
      }
    };
    expect(problem(agent('a', ['b']))).toBe('agents: a cycle of sub-agents: a → b → a');
    expect(problem(agent('a', ['ghost']))).toMatch(/agents\[0\]: unknown agent "ghost"/);
    expect(problem(agent('c', ['b', 'b']))).toMatch(/agents\[1\].*twice/);
    expect(problem(agent('c', ['b'], 6))).toMatch(/maxDepth must be an integer from 1 to 5/);
    expect(problem(agent('c', ['b'], 2))).toBeUndefined();
  });

  it('derives one child id per parent call, uuid-shaped', () => {
    const id = childConversationIdOf('p1', 'call-1');
    expect(id).toBe(childConversationIdOf('p1', 'call-1'));
    expect(id).not.toBe(childConversationIdOf('p1', 'call-2'));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('at run time: a child below the chain, a cycle and a depth past the limit as tool errors', () => {
    const root = { conversationId: 'c1', agent: agent('a1') };
    const run = judgeSubAgentCall('agent__a2', 't1', root);
    expect(run).toMatchObject({ kind: 'run', agentId: 'a2', link: { chain: ['a1'], depthLimit: 5 } });
    expect(judgeSubAgentCall('get_weather', 't1', root)).toBeUndefined();
    const deep = {
      conversationId: 'c5',
      parent: { conversationId: 'c4', toolCallId: 't4', chain: ['a1', 'a2', 'a3', 'a4'], depthLimit: 5 },
      agent: agent('a5'),
    };
    expect(judgeSubAgentCall('agent__a6', 't5', deep)).toMatchObject({
      kind: 'refuse',
      error: { code: 'max_depth', message: expect.stringContaining('depth 6, past the limit of 5') },
    });
    expect(judgeSubAgentCall('agent__a2', 't5', deep)).toMatchObject({
      kind: 'refuse',
      error: { code: 'cycle', message: expect.stringContaining('a2 → a3 → a4 → a5 → a2') },
    });
    // The root's maxDepth lowers the limit for the whole chain below it.
    const lowered = judgeSubAgentCall('agent__a2', 't1', { conversationId: 'c1', agent: agent('a1', [], 1) });
    expect(lowered).toMatchObject({ kind: 'refuse', error: { code: 'max_depth' } });
  });
});

describe('sub-agent policy', () => {
  const started = { type: 'TurnStarted', data: { turnId: 'u1' } };
  const answer = (text: string) => ({ type: 'AssistantMessageCompleted', data: { turnId: 'u1', text } });

  it("answers the parent with the child's last message, or a tool error when it failed or was cancelled", () => {
    const done = { type: 'TurnCompleted', data: { turnId: 'u1' } };
    expect(
      childOutcomeOf('r', done, [started, answer('looking'), answer('Owls are birds.'), answer('')]),
    ).toEqual({ ok: true, result: 'Owls are birds.' });
    const failed = { type: 'TurnFailed', data: { turnId: 'u1', error: { code: 'x', message: 'boom' } } };
    expect(childOutcomeOf('r', failed, [])).toEqual({
      ok: false,
      error: { code: 'sub_agent_failed', message: 'agent "r" failed: boom' },
    });
    const cancelled = { type: 'TurnCancelled', data: { turnId: 'u1' } };
    expect(childOutcomeOf('r', cancelled, [])).toMatchObject({ ok: false, error: { code: 'cancelled' } });
  });

  it("reports only the child's first turn (later ones are the child's own)", () => {
    const events = [
      started,
      { type: 'TurnCompleted', data: { turnId: 'u1' } },
      { type: 'TurnStarted', data: { turnId: 'u2' } },
    ];
    expect(endsFirstTurn({ type: 'TurnCompleted', data: { turnId: 'u1' } }, events)).toBe(true);
    expect(endsFirstTurn({ type: 'TurnCompleted', data: { turnId: 'u2' } }, events)).toBe(false);
  });

  it("passes a child's approval and a deeper one up under the parent's call, naming the asking conversation", () => {
    const link = { conversationId: 'p', toolCallId: 'pt', chain: ['a'], depthLimit: 5 };
    const own = {
      approvalId: 'ap',
      toolCallId: 'ct',
      name: 'delete_page',
      args: { id: 1 },
      requestedAt: 'now',
    };
    expect(approvalForParent('child', link, { type: 'ApprovalRequested', data: own })).toEqual({
      toolCallId: 'pt',
      conversationId: 'child',
      childToolCallId: 'ct',
      approvalId: 'ap',
      name: 'delete_page',
      args: { id: 1 },
      requestedAt: 'now',
    });
    const deeper = { ...own, toolCallId: 'mid', conversationId: 'grandchild', childToolCallId: 'gt' };
    expect(approvalForParent('child', link, { type: 'ChildApprovalRequested', data: deeper })).toMatchObject({
      toolCallId: 'pt',
      conversationId: 'grandchild',
      childToolCallId: 'gt',
    });
  });

  it("cancels the children of a cancelled or failed turn, not of another turn's", () => {
    const call = (turnId: string, child: string) => ({
      type: 'ToolCallRequested',
      data: {
        turnId,
        toolCallId: `t-${child}`,
        name: 'agent__r',
        args: { task: 'x' },
        childConversationId: child,
      },
    });
    const events = [call('u1', 'k1'), call('u0', 'k0'), call('u1', 'k2')];
    expect(childrenToCancel({ type: 'TurnCancelled', data: { turnId: 'u1' } }, events)).toEqual(['k1', 'k2']);
    expect(childrenToCancel({ type: 'TurnCompleted', data: { turnId: 'u1' } }, events)).toEqual([]);
  });
});
