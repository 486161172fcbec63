import { ownValue } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import type { Conversation, CurrentTurn } from '../conversation/conversation.state.js';
import type { PromptMessage, PromptTool } from '../prompt/prompt.js';
import { INTENT_SECTION, promptMessages } from '../prompt/prompt.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import { applyContextPolicy } from './context-policy.js';
import { withFilledInstructions, withMessageContext } from './end-user-prompt.js';
import { entitiesOf, withKnownEntities } from './working-memory.js';
import type { Classified } from './intents.js';

/**
 * The prompt of a model call: the conversation as the model sees it, the entities its tool
 * results named (read before anything is stubbed) in a "Known entities" section, the turn's
 * message context in its own section, then the agent's context policy. The instructions are
 * filled for the turn (templates).
 */
export const promptOf = (
  agent: AgentDefinition,
  tools: PromptTool[],
  state: Conversation,
  tenant: TenantConfig,
  classified?: Classified,
): PromptMessage[] => {
  const full = promptMessages(withFilledInstructions(agent, state), tools, state);
  const entities = entitiesOf(full, (name) => ownValue(tenant.tools, name)?.memory);
  const guided = withMessageContext(withGuidance(withKnownEntities(full, entities), classified), state);
  return applyContextPolicy(guided, agent.options?.context).messages;
};

/**
 * The intent the turn's message was classified as when the turn started (the log is the truth:
 * an edit of the agent's intents mid-turn changes nothing), with its definition as recorded then;
 * a turn recorded before the definition was takes the agent's intent of that name. None: all tools.
 */
export const turnIntent = (agent: AgentDefinition, turn: CurrentTurn): Classified | undefined => {
  if (turn.intent === undefined) return undefined;
  const intent = turn.agent.matchedIntent ?? agent.options?.intents?.find((i) => i.name === turn.intent);
  return intent ? { intent, confidence: turn.confidence ?? 1 } : undefined;
};

/** The matched intent's guidance as a section at the end of the system prompt. */
const withGuidance = (messages: PromptMessage[], classified: Classified | undefined): PromptMessage[] => {
  const guidance = classified?.intent.guidance;
  if (!guidance || messages[0]?.role !== 'system') return messages;
  const section = `${INTENT_SECTION}${classified.intent.name} (confidence ${classified.confidence}): ${guidance}`;
  return [{ role: 'system', content: `${messages[0].content}${section}` }, ...messages.slice(1)];
};
