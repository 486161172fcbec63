import type { EventData } from '@keel/core';

/*
 * Sub-agents (API.md "Tool sources and policies"): an agent's `agents` are offered as tools
 * `agent__<agentId>`; a call runs a child conversation whose creation links it to the parent's
 * tool call, and the parent waits for the child's turn like for any tool result.
 */

/** The prefix of a sub-agent tool's name: `agent__researcher` runs agent `researcher`. */
export const SUB_AGENT_TOOL_PREFIX = 'agent__';

/** The deepest chain of conversations one root may start (the root is depth 1). */
export const MAX_AGENT_DEPTH = 5;

/** The agent a sub-agent tool name stands for, or undefined when the name is no sub-agent tool. */
export const subAgentIdOf = (toolName: string): string | undefined =>
  toolName.startsWith(SUB_AGENT_TOOL_PREFIX) && toolName.length > SUB_AGENT_TOOL_PREFIX.length
    ? toolName.slice(SUB_AGENT_TOOL_PREFIX.length)
    : undefined;

/**
 * What a child conversation's creation records of its parent: the parent's conversation and tool
 * call, the agents of the call chain from the root to the parent (the child's depth is
 * `chain.length + 1`), and the depth limit in force along it (5, or lower by an agent's `maxDepth`).
 */
export interface ParentLink {
  conversationId: string;
  toolCallId: string;
  chain: string[];
  depthLimit: number;
}

/**
 * A descendant conversation's tool call needs a person's decision (API `approval.required` with
 * the child's `conversationId`, in the parent's stream). Recorded in the parent while its
 * sub-agent call `toolCallId` is open; the decision goes through the child's approval route.
 */
export type ChildApprovalRequested = EventData<
  'ChildApprovalRequested',
  {
    turnId: string;
    /** The parent's sub-agent call the approval was asked under. */
    toolCallId: string;
    /** The conversation that asked (a child, or a deeper descendant). */
    conversationId: string;
    approvalId: string;
    /** The asking conversation's tool call. */
    childToolCallId: string;
    name: string;
    args: unknown;
    message?: string;
    requestedAt: string;
  }
>;
