import type { LogPort, RecordedEvent } from '@keel/core';
import { messageOf, ownValue, parseStreamName } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import type { ConversationCommand } from '../conversation/conversation.commands.js';
import { ConversationConflictError } from '../conversation/conversation.decider.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import type { Conversation } from '../conversation/conversation.state.js';
import type { ModelStep, ModelStepOutput, ProviderCredentials } from '../model/model-step.js';
import type { PricedUsage, UsagePricing } from '../pricing/usage-pricing.js';
import type { PromptMessage } from '../prompt/prompt.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { CallContext } from '../call-context.js';

/*
 * An agent's `autoTitle`: after a turn completes in an untitled conversation, one short model
 * call titles it. The call is a step of its own, made durable as the turn's model steps are: its
 * output is recorded through the decider (RecordAutoTitle), which accepts one recording per
 * conversation ever, so a redelivered trigger, a crash between the call and the recording, or a
 * second instance never titles (nor counts usage) twice. Priced and counted like any model call:
 * its UsageRecorded is step 0 of the turn it followed.
 */

/** The instruction of the title call. */
export const TITLE_INSTRUCTION =
  'Write a short title (at most 6 words) for the conversation below. Answer with the title only, without quotes.';

/** Characters of the transcript the title call is shown. */
const TRANSCRIPT_CHARS = 4000;

/** Whether `event` makes the conversation's title call due (pure). */
export const titleDue = (
  event: RecordedEvent,
  state: Conversation,
  agent: AgentDefinition | undefined,
): boolean =>
  event.type === 'TurnCompleted' &&
  agent?.options?.autoTitle === true &&
  state.status !== 'new' &&
  state.title === undefined &&
  state.autoTitledAfter === undefined;

/** The title call's prompt: the instruction, then the branch's user and assistant text (pure). */
export const titlePrompt = (state: Conversation): PromptMessage[] => {
  const transcript = state.messages
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content.trim() !== '')
    .map((m) => `${m.role}: ${m.content}`)
    .join('\n')
    .slice(0, TRANSCRIPT_CHARS);
  return [
    { role: 'system', content: TITLE_INSTRUCTION },
    { role: 'user', content: transcript },
  ];
};

/** The title a model answered: one line, no surrounding quotes or trailing period (pure). */
export const titleOf = (text: string): string =>
  (text.trim().split('\n')[0] ?? '')
    .trim()
    .replace(/^["'“”]+|["'“”]+$/g, '')
    .replace(/\.$/, '')
    .trim();

/** The command that records the title call (pure). */
export const autoTitleCommand = (input: {
  turnId: string;
  output: ModelStepOutput;
  priced: PricedUsage;
  at: string;
}): Extract<ConversationCommand, { type: 'RecordAutoTitle' }> => {
  const { output, priced } = input;
  return {
    type: 'RecordAutoTitle',
    turnId: input.turnId,
    title: titleOf(output.text),
    usage: {
      model: output.model,
      promptTokens: output.usage.promptTokens,
      completionTokens: output.usage.completionTokens,
      cacheReadTokens: output.usage.cacheReadTokens,
      cacheWriteTokens: output.usage.cacheWriteTokens,
      costUsd: priced.costUsd,
      ...(priced.reason !== undefined ? { costReason: priced.reason } : {}),
    },
    at: input.at,
  };
};

/** What the titler runs on (the turn worker's own ports). */
export interface AutoTitlerDeps {
  conversations: ConversationService;
  config: TenantConfigService;
  modelStep: ModelStep;
  pricing?: UsagePricing;
  credentials: (tenantId: string, model: string) => Promise<ProviderCredentials>;
  logger: LogPort;
}

/** Runs the title call after a TurnCompleted when it is due, and records it once. */
export class AutoTitler {
  constructor(private readonly deps: AutoTitlerDeps) {}

  async onTurnCompleted(event: RecordedEvent, ctx: CallContext): Promise<void> {
    const { conversations, config } = this.deps;
    const conversationId = parseStreamName(event.streamName).id;
    const tenant = await config.load(event.tenantId);
    // A tenant none of whose agents titles conversations: nothing to read.
    if (!Object.values(tenant.agents).some((a) => a.options?.autoTitle === true)) return;
    const { state } = await this.stateAfter(event);
    const agent = ownValue(tenant.agents, state.agentId);
    if (!titleDue(event, state, agent)) return;
    const turnId = String((event.data as { turnId?: unknown }).turnId ?? '');
    const log = { tenantId: event.tenantId, conversationId, turnId, step: 0 };
    let output: ModelStepOutput;
    try {
      output = await this.deps.modelStep({
        model: agent!.model,
        credentials: await this.deps.credentials(event.tenantId, agent!.model),
        messages: titlePrompt(state),
        tools: [],
        temperature: 0,
        signal: AbortSignal.timeout(30_000),
        onDelta: () => undefined,
      });
    } catch (error) {
      // Untitled is fine: the conversation works on; the log says why.
      this.deps.logger.warn({ ...log, err: messageOf(error) }, 'auto title call failed');
      return;
    }
    const at = new Date().toISOString();
    const priced = await this.price(output, at);
    await conversations
      .run(ctx, conversationId, autoTitleCommand({ turnId, output, priced, at }))
      .catch((error: unknown) => {
        if (!(error instanceof ConversationConflictError)) throw error;
      });
    this.deps.logger.info(log, 'auto title recorded');
  }

  /**
   * The conversation as of `event` or later: the state this process holds when it includes the
   * event (no read), else a load. A title recorded since by another process is caught by the
   * decider, which records one title per conversation (a wasted call at worst).
   */
  private async stateAfter(event: RecordedEvent): Promise<{ state: Conversation }> {
    const { handler } = this.deps.conversations;
    const held = handler.remembered(event.tenantId, event.streamName);
    return held && held.version >= event.version ? held : handler.load(event.tenantId, event.streamName);
  }

  private async price(output: ModelStepOutput, at: string): Promise<PricedUsage> {
    return this.deps.pricing
      ? this.deps.pricing.price({ model: output.model, ...output.usage, at })
      : { costUsd: null, reason: 'no pricing service configured', windowTokens: null };
  }
}
