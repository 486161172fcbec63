import { ownValue } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import type { Conversation } from '../conversation/conversation.state.js';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import { promptMessages } from '../prompt/prompt.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import { applyContextPolicy } from './context-policy.js';
import { entitiesOf, withKnownEntities } from './working-memory.js';

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
): PromptMessage[] => {
  const full = promptMessages(agent, tools, state);
  const entities = entitiesOf(full, (name) => ownValue(tenant.tools, name)?.memory);
  return applyContextPolicy(withKnownEntities(full, entities), agent.options?.context).messages;
};
