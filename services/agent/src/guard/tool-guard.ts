import type { AgentPhases, EndUser } from '@keel/events';
import { allowsEndUser } from '@keel/events';
import type { ToolCallVerdict } from '../conversation/conversation.commands.js';

/** Roles of tenant keys, as API.md names them. */
export type Role = 'admin' | 'editor' | 'viewer';

/** What the guard needs to know of a tool (a tenant tool or a built-in). */
export interface GuardedTool {
  name: string;
  approval: 'never' | 'always';
  /** Roles whose keys may cause a call; empty means every role that may send messages. */
  roles: Role[];
  /** Phases the tool may run in; empty means every phase. */
  phases: string[];
  /** End-user roles (`X-Keel-User-Role`) whose turns may call it; absent or empty: every end user. */
  userRoles?: string[];
}

/** The agent's side of the guard: which tools it has, and its phase machine if it declares one. */
export interface GuardedAgent {
  tools: string[];
  phases?: AgentPhases;
}

/** One tool call to judge. */
export interface GuardInput {
  name: string;
  /** Problems with the arguments against the tool's JSON schema (empty when valid). */
  argErrors: Array<{ path: string; message: string }>;
  tool: GuardedTool | undefined;
  agent: GuardedAgent;
  role: Role;
  /** The conversation's current phase (undefined when the agent declares none). */
  phase: string | undefined;
  /** The turn's end user (absent in turns recorded before it). */
  user?: EndUser;
}

const refuse = (code: string, message: string): ToolCallVerdict => ({
  kind: 'refuse',
  error: { code, message },
});

/**
 * Decides whether a tool call the model asked for may run. A refusal is not an error of the turn:
 * it goes back to the model as the tool's result, worded so the model can correct itself.
 */
export const guardToolCall = (input: GuardInput): ToolCallVerdict => {
  const { name, tool, agent, role, phase, argErrors } = input;
  if (!tool || typeof name !== 'string' || tool.name !== name || !agent.tools.includes(name)) {
    const available = agent.tools.length > 0 ? agent.tools.join(', ') : 'none';
    return refuse('unknown_tool', `there is no tool named "${name}". Tools available: ${available}.`);
  }
  if (tool.roles.length > 0 && !tool.roles.includes(role)) {
    return refuse(
      'forbidden_tool',
      `"${name}" may not be called on behalf of a ${role}. Do the task without it or ask the user.`,
    );
  }
  if (!allowsEndUser(tool.userRoles, input.user)) {
    // Not offered to this end user either (offeredTools): the model called it anyway.
    return refuse(
      'forbidden_for_user_role',
      `"${name}" is not available to this user${input.user?.role ? ` (role ${input.user.role})` : ''}. Do the task without it.`,
    );
  }
  if (phase !== undefined && tool.phases.length > 0 && !tool.phases.includes(phase)) {
    const allowedHere = agent.tools.filter((t) => t !== name);
    const path = agent.phases?.transitions.filter(
      (t) => tool.phases.includes(t.to) && (!t.from || t.from === phase),
    );
    const suggestion =
      path && path.length > 0
        ? ` First call ${path.map((t) => `"${t.tool}"`).join(' or ')} to move to the "${path[0]!.to}" phase.`
        : allowedHere.length > 0
          ? ` Tools you may use in the "${phase}" phase include: ${allowedHere.join(', ')}.`
          : '';
    return refuse(
      'wrong_phase',
      `"${name}" is not allowed in the "${phase}" phase (allowed in: ${tool.phases.join(', ')}).${suggestion}`,
    );
  }
  if (argErrors.length > 0) {
    const problems = argErrors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ');
    return refuse(
      'invalid_arguments',
      `the arguments for "${name}" are invalid: ${problems}. Call it again with valid arguments.`,
    );
  }
  return { kind: 'allow', approval: tool.approval };
};

/** The phase after a successful tool result: the first matching transition, else unchanged. */
export const nextPhase = (
  phases: AgentPhases | undefined,
  phase: string | undefined,
  tool: string,
): string | undefined => {
  if (!phases) return phase;
  const transition = phases.transitions.find((t) => t.tool === tool && (!t.from || t.from === phase));
  return transition ? transition.to : phase;
};
