import { createHash } from 'node:crypto';
import { ValidationError, ownValue } from '@keel/core';
import type { AgentDefinition, EventError, ParentLink } from '@keel/events';
import { MAX_AGENT_DEPTH, SUB_AGENT_TOOL_PREFIX, subAgentIdOf } from '@keel/events';
import type { ResolvedTool } from '../turn/tool-catalog.js';

/*
 * Sub-agents as rules (API.md "Tool sources and policies", Sub-agents): which tools an agent's
 * `agents` offer, the cycle a definition would close (refused at PUT), the chain check at run time
 * (a cycle or a depth past the limit is a tool error, not a failed parent), and the child
 * conversation's id, derived from the parent's call so a repeat after any crash is the same child.
 * Pure: no IO, no clock.
 */

/** The input every sub-agent tool takes. */
export const SUB_AGENT_INPUT_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: { task: { type: 'string', minLength: 1, description: 'What the agent is to do.' } },
  required: ['task'],
  additionalProperties: false,
};

/**
 * The tools `agent__<id>` of the agents offered as sub-agents (an agent's `agents`, and a
 * hierarchical run manager's members), each once; an agent that no longer exists is skipped.
 */
export const subAgentTools = (
  agentIds: readonly string[],
  agents: Readonly<Record<string, AgentDefinition>>,
): ResolvedTool[] =>
  [...new Set(agentIds)].flatMap((agentId): ResolvedTool[] => {
    const child = ownValue(agents, agentId);
    if (!child) return [];
    return [
      {
        name: `${SUB_AGENT_TOOL_PREFIX}${agentId}`,
        // Its instructions stay its own (a prompt of the parent never carries them).
        description: `Hands a task to the agent "${agentId}" and answers with its final answer.`,
        inputSchema: SUB_AGENT_INPUT_SCHEMA,
        approval: 'never',
        roles: [],
        phases: [],
      },
    ];
  });

/**
 * The cycle that saving `agent` would close among the tenant's agents, as the path of agent ids
 * from it back to it (`['a', 'b', 'a']`), or undefined when there is none.
 */
export const cycleThrough = (
  agent: AgentDefinition,
  agents: Readonly<Record<string, AgentDefinition>>,
): string[] | undefined => {
  const childrenOf = (id: string): string[] =>
    id === agent.agentId ? (agent.options?.agents ?? []) : (ownValue(agents, id)?.options?.agents ?? []);
  const visit = (id: string, path: string[], seen: Set<string>): string[] | undefined => {
    for (const child of childrenOf(id)) {
      if (child === agent.agentId) return [...path, child];
      if (seen.has(child)) continue;
      seen.add(child);
      const found = visit(child, [...path, child], seen);
      if (found) return found;
    }
    return undefined;
  };
  return visit(agent.agentId, [agent.agentId], new Set());
};

/** A path of agents as API.md writes it: `a → b → a`. */
export const chainText = (path: readonly string[]): string => path.join(' → ');

/** The id of the child conversation a parent's sub-agent call runs: the same for every repeat. */
export const childConversationIdOf = (parentConversationId: string, toolCallId: string): string => {
  const hex = createHash('sha256')
    .update(`keel-sub-agent\u0000${parentConversationId}\u0000${toolCallId}`)
    .digest('hex');
  // UUID-shaped (version 8: application-defined), like the other conversation ids.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/** Where a conversation stands in a call chain: the agents above it and the depth limit in force. */
export interface ChainPosition {
  conversationId: string;
  /** Its creation's parent link; absent for a root conversation. */
  parent?: ParentLink;
  /** The conversation's agent now (its `maxDepth` may lower the limit). */
  agent: Pick<AgentDefinition, 'agentId' | 'options'>;
}

/** What a sub-agent call may do: run a child conversation linked so, or be refused with a tool error. */
export type SubAgentCallVerdict =
  | { kind: 'run'; childConversationId: string; link: ParentLink; agentId: string }
  | { kind: 'refuse'; error: EventError };

/**
 * The run-time check of a call to `agent__<id>` from a conversation at `position`: an agent
 * already in the chain (itself included) is a `cycle`, a child deeper than the limit (5, or an
 * agent's `maxDepth` along the chain) is `max_depth`.
 */
export const judgeSubAgentCall = (
  toolName: string,
  toolCallId: string,
  position: ChainPosition,
): SubAgentCallVerdict | undefined => {
  const agentId = subAgentIdOf(toolName);
  if (agentId === undefined) return undefined;
  const chain = [...(position.parent?.chain ?? []), position.agent.agentId];
  const depthLimit = Math.min(
    position.parent?.depthLimit ?? MAX_AGENT_DEPTH,
    position.agent.options?.maxDepth ?? MAX_AGENT_DEPTH,
  );
  if (chain.includes(agentId)) {
    const path = chainText([...chain.slice(chain.indexOf(agentId)), agentId]);
    return {
      kind: 'refuse',
      error: { code: 'cycle', message: `not run: "${agentId}" is already in the call chain (${path})` },
    };
  }
  const depth = chain.length + 1;
  if (depth > depthLimit) {
    return {
      kind: 'refuse',
      error: {
        code: 'max_depth',
        message: `not run: "${agentId}" would run at depth ${depth}, past the limit of ${depthLimit} (${chainText([...chain, agentId])})`,
      },
    };
  }
  const childConversationId = childConversationIdOf(position.conversationId, toolCallId);
  const link: ParentLink = { conversationId: position.conversationId, toolCallId, chain, depthLimit };
  return { kind: 'run', childConversationId, link, agentId };
};

/** Most agents one agent may offer as sub-agents. */
export const MAX_SUB_AGENTS = 20;

/**
 * Checks an agent's `agents` and `maxDepth` as saved (PUT /v1/agents): each a known agent of the
 * tenant, listed once, and no cycle through the agent (400 naming the path `a → b → a`);
 * `maxDepth` an integer from 1 to 5. Depth along a chain is checked when it runs.
 */
export const checkSubAgents = (
  agent: AgentDefinition,
  agents: Readonly<Record<string, AgentDefinition>>,
): void => {
  const fail = (field: string, message: string): never => {
    throw new ValidationError(message, { field });
  };
  const { agents: listed = [], maxDepth } = agent.options ?? {};
  if (!Array.isArray(listed) || listed.length > MAX_SUB_AGENTS) {
    fail('agents', `agents must be a list of at most ${MAX_SUB_AGENTS} agent ids`);
  }
  listed.forEach((id, i) => {
    if (id !== agent.agentId && !ownValue(agents, id))
      fail(`agents[${i}]`, `agents[${i}]: unknown agent "${id}"`);
    if (listed.indexOf(id) !== i) fail(`agents[${i}]`, `agents[${i}]: "${id}" is listed twice`);
  });
  if (maxDepth !== undefined && (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > MAX_AGENT_DEPTH)) {
    fail('maxDepth', `maxDepth must be an integer from 1 to ${MAX_AGENT_DEPTH}`);
  }
  const cycle = cycleThrough(agent, agents);
  if (cycle) fail('agents', `agents: a cycle of sub-agents: ${chainText(cycle)}`);
};
