import type { AgentDefinition } from '@keel/events';
import type { Conversation } from '../conversation/conversation.state.js';

/** A message to send to the model, independent of any provider library. */
export type PromptMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: Array<{ id: string; name: string; args: unknown }> }
  | { role: 'tool'; toolCallId: string; content: string };

/** A tool as the model is told of it. */
export interface PromptTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * The rules every agent follows. Part of the static prefix: it never changes between requests,
 * so providers' prompt caches (OpenAI, Anthropic) hit on it.
 */
const RULES = [
  'Use a tool only when it helps answer the user; call tools with arguments that match their schema.',
  'A tool result that is an error tells you why: correct the call or answer without it.',
  'A tool call a person denied must not be retried in this turn.',
  'Never invent tool results.',
].join('\n- ');

/** Where the per-conversation part of the system prompt starts: what is before it is the stable prefix. */
export const STATE_SECTION = '\n\n# State\n';

/** The heading of the working-memory section, after the stable prefix too (turn/working-memory.ts). */
export const KNOWN_ENTITIES_SECTION = '\n\n# Known entities\n';

/** The heading of the matched intent's guidance, after the stable prefix too (turn/intents.ts). */
export const INTENT_SECTION = '\n\n# Intent\n';

/** The heading of the turn's per-message context, after the stable prefix too (turn/end-user-prompt.ts). */
export const MESSAGE_CONTEXT_SECTION = '\n\n# Context\n';

/**
 * The system prompt, in sections ordered from the most stable to the least: role, rules,
 * instructions and tools (per agent), then state (per conversation). Everything before the state
 * section is identical for every request of an agent, which is what prompt caches key on.
 */
export const systemPrompt = (
  agent: AgentDefinition,
  tools: PromptTool[],
  state: { phase?: string },
): string => {
  const sections = [
    '# Role\nYou are an assistant running on Keel. You answer the user and may call the tools listed below.',
    `# Rules\n- ${RULES}`,
    `# Instructions\n${agent.instructions.trim() || '(none)'}`,
    `# Tools\n${
      tools.length > 0
        ? tools.map((t) => `- ${t.name}: ${t.description}`).join('\n')
        : 'No tools are available.'
    }`,
  ];
  const stable = sections.join('\n\n');
  return state.phase === undefined ? stable : `${stable}${STATE_SECTION}Current phase: ${state.phase}`;
};

/** Cuts a tool result for the model; the full result stays in the event log. */
export const truncateForModel = (content: string, maxChars: number): string =>
  content.length <= maxChars
    ? content
    : `${content.slice(0, maxChars)}… [truncated: ${content.length - maxChars} more characters not shown]`;

/** The messages of a model call: the system prompt, then the conversation as the model must see it. */
export const promptMessages = (
  agent: AgentDefinition,
  tools: PromptTool[],
  conversation: Conversation,
): PromptMessage[] => {
  const messages: PromptMessage[] = [
    {
      role: 'system',
      content: systemPrompt(agent, tools, { ...(conversation.phase ? { phase: conversation.phase } : {}) }),
    },
  ];
  for (const m of conversation.messages) {
    switch (m.role) {
      case 'user':
        messages.push({ role: 'user', content: m.content });
        break;
      case 'assistant':
        messages.push({
          role: 'assistant',
          content: m.content,
          ...(m.toolCalls?.length
            ? { toolCalls: m.toolCalls.map((c) => ({ id: c.toolCallId, name: c.name, args: c.args })) }
            : {}),
        });
        break;
      case 'tool':
        messages.push({
          role: 'tool',
          toolCallId: m.toolCallId ?? '',
          content: truncateForModel(m.content, agent.toolResultMaxChars),
        });
        break;
    }
  }
  return messages;
};
