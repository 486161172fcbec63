import { ownValue } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import type { Conversation } from '../conversation/conversation.state.js';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import { INTENT_SECTION, promptMessages } from '../prompt/prompt.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import { applyContextPolicy } from './context-policy.js';
import { entitiesOf, withKnownEntities } from './working-memory.js';
import type { Classified } from './intents.js';
import { classifyIntent } from './intents.js';

/**
 * The prompt of a model call: the conversation as the model sees it, the entities its tool
 * results named (read before anything is stubbed) in a "Known entities" section, then the
 * agent's context policy.
 */
export const promptOf = (
  agent: AgentDefinition,
  tools: PromptTool[],
  state: Conversation,
  tenant: TenantConfig,
  classified?: Classified,
): PromptMessage[] => {
  const full = promptMessages(agent, tools, state);
  const entities = entitiesOf(full, (name) => ownValue(tenant.tools, name)?.memory);
  const guided = withGuidance(withKnownEntities(full, entities), classified);
  return applyContextPolicy(guided, agent.options?.context).messages;
};

/** The intent of the turn's user message (the latest one), classified by the agent's intents. */
export const turnIntent = (agent: AgentDefinition, state: Conversation): Classified | undefined => {
  const user = [...state.messages].reverse().find((m) => m.role === 'user');
  return user ? classifyIntent(user.content, agent.options?.intents) : undefined;
};

/** The matched intent's guidance as a section at the end of the system prompt. */
const withGuidance = (messages: PromptMessage[], classified: Classified | undefined): PromptMessage[] => {
  const guidance = classified?.intent.guidance;
  if (!guidance || messages[0]?.role !== 'system') return messages;
  const section = `${INTENT_SECTION}${classified.intent.name} (confidence ${classified.confidence}): ${guidance}`;
  return [{ role: 'system', content: `${messages[0].content}${section}` }, ...messages.slice(1)];
};
