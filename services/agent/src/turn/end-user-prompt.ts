import type { AgentDefinition } from '@keel/events';
import type { Conversation } from '../conversation/conversation.state.js';
import type { PromptMessage } from '../prompt/prompt.js';
import { MESSAGE_CONTEXT_SECTION } from '../prompt/prompt.js';
import { fillTemplate } from '../prompt/instruction-template.js';

/*
 * What the end user brings to a turn's prompt (API.md "The client in the loop"): the agent's
 * instructions filled for this turn, and the context the turn's message was sent with, in its own
 * section after the stable prefix (so a provider's prompt cache still hits on the prefix).
 */

/**
 * The agent with its instructions filled for the running turn: the conversation's metadata, the
 * turn's end user and its start instant (the same for every step of the turn).
 */
export const withFilledInstructions = (agent: AgentDefinition, state: Conversation): AgentDefinition => {
  if (!agent.instructions.includes('{{')) return agent;
  const instructions = fillTemplate(agent.instructions, {
    metadata: state.metadata,
    user: state.turn?.user,
    now: state.turn?.startedAt ?? state.createdAt,
    ...(agent.options?.timeZone ? { timeZone: agent.options.timeZone } : {}),
  });
  return { ...agent, instructions };
};

/** The context the turn's message (the latest user message) was sent with, if any. */
const turnContext = (state: Conversation): Record<string, unknown> | undefined =>
  [...state.messages].reverse().find((m) => m.role === 'user')?.context;

/** The turn's message context as a section at the end of the system prompt; unchanged without one. */
export const withMessageContext = (messages: PromptMessage[], state: Conversation): PromptMessage[] => {
  const context = turnContext(state);
  if (context === undefined || messages[0]?.role !== 'system') return messages;
  const section = `${MESSAGE_CONTEXT_SECTION}What the user's screen shows with their latest message (JSON):\n${JSON.stringify(context)}`;
  return [{ role: 'system', content: `${messages[0].content}${section}` }, ...messages.slice(1)];
};
