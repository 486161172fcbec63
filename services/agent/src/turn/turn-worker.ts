import type {
  Consumer,
  Delivery,
  EphemeralSubscription,
  EventBus,
  EventStore,
  LogPort,
  RecordedEvent,
} from '@keel/core';
import { KeelError, isEvent, messageOf, ownValue, parseStreamName, uuidv7 } from '@keel/core';
import type { AgentDefinition, ToolCallExecuted } from '@keel/events';
import { CONVERSATION_CATEGORY, TOOL_CALL_CATEGORY, turnIdOf } from '@keel/events';
import type { SecretBox } from '@keel/runtime';
import { EgressDeniedError } from '@keel/runtime';
import type { ConversationCommand, ToolCallVerdict } from '../conversation/conversation.commands.js';
import { ConversationConflictError } from '../conversation/conversation.decider.js';
import type { Conversation, CurrentTurn } from '../conversation/conversation.state.js';
import type { ModelStep, ModelStepOutput, ProviderCredentials } from '../model/model-step.js';
import { modelOptionsOf } from '../model/fallback-model-step.js';
import type { PricedUsage, UsagePricing } from '../pricing/usage-pricing.js';
import { promptOf, turnIntent } from './turn-prompt.js';
import { narrowTools } from './intents.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import type { CallContext } from '../call-context.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { AutoTitler } from './auto-title.js';
import type { TurnMetrics } from './turn-metrics.js';
import { NO_TURN_METRICS, TurnTimings } from './turn-metrics.js';
import type { ResolvedTool, ToolCatalog } from './tool-catalog.js';
import { resolveTools } from './tool-catalog.js';
import { offeredTools } from './offered-tools.js';
import { subAgentTools } from '../sub-agents/sub-agent-rules.js';
import type { GuardContext, KeptToolCall } from './step-policy.js';
import {
  dueStep,
  guardContext,
  isStepTrigger,
  judgeToolCall,
  keptToolCalls,
  recordModelOutput,
} from './step-policy.js';

/** One model step's identity, as its parts (model call, recording) need it. */
interface StepCall {
  tenantId: string;
  conversationId: string;
  turn: CurrentTurn;
  step: number;
  /** The conversation's version the step runs on (ephemeral messages say they follow it). */
  version: number;
  log: { tenantId: string; conversationId: string; turnId: string; step: number; correlationId: string };
  ctx: CallContext;
}

/** What the worker runs on. */
export interface TurnWorkerDeps {
  store: EventStore;
  bus: EventBus;
  conversations: ConversationService;
  config: TenantConfigService;
  modelStep: ModelStep;
  catalog: ToolCatalog;
  /** Opens tenants' sealed provider keys; without it only process-wide credentials are used. */
  secrets?: SecretBox;
  /** Prices each model call (the pricing service); without it every call is recorded unpriced. */
  pricing?: UsagePricing;
  logger: LogPort;
  /** Turns, model calls, first tokens, tokens and cost (the service's metrics); default none. */
  metrics?: TurnMetrics;
  /** Model steps run at once by this instance (other conversations wait). Default 32. */
  concurrency?: number;
  /** How long a step may go without a sign of life before it is redelivered to another instance. Default 30 s. */
  ackWaitMs?: number;
}

/**
 * Runs turns: takes conversation events from a shared durable consumer (any instance takes any
 * step), calls the model for the next step when a turn is ready for one, streams its tokens as
 * ephemeral deltas, and records the output through the conversation decider. A step is recorded
 * once: a redelivered trigger finds the step done, and a racing second output is refused.
 */
export class TurnWorker {
  private readonly consumers: Consumer[] = [];
  private cancelSubscription: EphemeralSubscription | undefined;
  private readonly inFlight = new Map<string, { turnId: string; controller: AbortController }>();

  private readonly metrics: TurnMetrics;
  private readonly timings: TurnTimings;
  private readonly titler: AutoTitler;

  constructor(private readonly deps: TurnWorkerDeps) {
    this.metrics = deps.metrics ?? NO_TURN_METRICS;
    this.timings = new TurnTimings(this.metrics);
    this.titler = new AutoTitler({
      ...deps,
      credentials: async (tenantId, model) =>
        this.credentials(await deps.config.load(tenantId), tenantId, model),
    });
  }

  async start(): Promise<void> {
    const { bus } = this.deps;
    this.cancelSubscription = bus.ephemeral.subscribe({ kind: 'cancel' }, ({ topic, data }) => {
      const running = this.inFlight.get(`${topic.tenantId}/${topic.conversationId}`);
      if (running && running.turnId === turnIdOf({ data })) running.controller.abort();
    });
    this.consumers.push(
      await bus.consume(
        {
          name: 'agent-turns',
          filter: { category: CONVERSATION_CATEGORY },
          idempotency: 'none',
          maxInFlight: this.deps.concurrency ?? 32,
          ackWaitMs: this.deps.ackWaitMs ?? 30_000,
        },
        (delivery) => this.onConversationEvent(delivery),
      ),
      await bus.consume(
        {
          name: 'agent-tool-results',
          filter: { category: TOOL_CALL_CATEGORY },
          // The decider records a call's result once (a repeat is a no-op): no inbox write per result.
          idempotency: 'none',
          maxInFlight: 32,
        },
        (delivery) => this.onToolExecuted(delivery),
      ),
    );
  }

  async stop(): Promise<void> {
    this.cancelSubscription?.unsubscribe();
    await Promise.all(this.consumers.splice(0).map((c) => c.stop()));
  }

  private async onToolExecuted({ event }: Delivery): Promise<void> {
    if (!isEvent<ToolCallExecuted>(event, 'ToolCallExecuted')) return;
    const { conversationId, toolCallId, ok, result, error } = event.data;
    await this.deps.conversations
      .recordToolResult(systemContext(event, 'tools'), conversationId, {
        toolCallId,
        ok,
        ...(ok ? { result } : { error: error ?? { code: 'tool_error', message: 'the tool failed' } }),
      })
      .catch((e: unknown) => {
        // A result for a call the conversation no longer waits for (turn cancelled) is not an error.
        if (!(e instanceof ConversationConflictError)) throw e;
      });
  }

  private async onConversationEvent(delivery: Delivery): Promise<void> {
    const { event } = delivery;
    // Counted once per event: a redelivered one was seen already.
    if (delivery.deliveryCount === 1 && delivery.replayOf === undefined) this.timings.observe(event);
    // An agent's autoTitle: the title call after a completed turn, a step of its own.
    if (event.type === 'TurnCompleted')
      return this.titler.onTurnCompleted(event, systemContext(event, 'agent'));
    if (!isStepTrigger(event)) return;
    const { store, conversations } = this.deps;
    // One view of the stream: the state as loaded, and the events after this trigger up to it.
    // The first delivery of a trigger this process just wrote (what it remembers ends there) runs
    // on that state without a read: anything appended since elsewhere makes the step's recording
    // fail its expected version and be decided again on a fresh load (a wasted call, no double effect).
    const { state, version } =
      (delivery.deliveryCount === 1 && delivery.replayOf === undefined
        ? await this.heldAt(event)
        : undefined) ?? (await conversations.handler.load(event.tenantId, event.streamName));
    const later =
      version > event.version
        ? await store.read(event.tenantId, event.streamName, {
            fromVersion: event.version + 1,
            toVersion: version,
          })
        : [];
    const due = dueStep(event, state, later);
    if (due.kind === 'model-step') await this.runStep(event, state, due.turn, version);
  }

  /**
   * The conversation as this process holds it at exactly the trigger's version, if it does. A
   * bus that delivers during the append (the in-memory one) hands the trigger over before its
   * writer has remembered the state: on a miss it is asked once more after the writer's
   * continuation has run (one turn of the event loop, before a read that costs far more).
   */
  private async heldAt(event: RecordedEvent): Promise<{ state: Conversation; version: number } | undefined> {
    const { handler } = this.deps.conversations;
    const held = handler.rememberedAt(event.tenantId, event.streamName, event.version);
    if (held) return held;
    await new Promise((resolve) => setImmediate(resolve));
    return handler.rememberedAt(event.tenantId, event.streamName, event.version);
  }

  /**
   * Runs the turn's next model step on `state`, which is the conversation at `version`. Each
   * ephemeral message it publishes carries the version of the log it follows (`version`): a feed
   * that has already yielded that version writes the message without reading the log first.
   */
  private async runStep(
    trigger: RecordedEvent,
    state: Conversation,
    turn: CurrentTurn,
    version: number,
  ): Promise<void> {
    const call = stepCall(trigger, turn, version);
    const { tenantId, conversationId, ctx, step, log } = call;
    const tenant = await this.deps.config.load(tenantId);
    const agent = ownValue(tenant.agents, turn.agent.agentId);
    if (!agent) {
      const message = `agent ${turn.agent.agentId} no longer exists`;
      await this.fail(ctx, conversationId, turn, 'agent_not_found', message);
      return;
    }
    const intent = turnIntent(agent, turn);
    const offered = [
      ...resolveTools(agent.tools, tenant, this.deps.catalog),
      ...subAgentTools([...(agent.options?.agents ?? []), ...(state.delegates ?? [])], tenant.agents),
    ];
    const tools = narrowTools(offered, intent);
    const phase = state.phase ?? agent.phases?.initial;
    const output = await this.callModel(call, tenant, agent, offeredTools(tools, turn.user, phase), state);
    if (!output) return;
    // The usage instant selects the price in force; it is also the recorded output's `at`.
    const at = new Date().toISOString();
    const priced = await this.priceUsage(output, at, log);
    const calls = keptToolCalls(output.toolCalls, uuidv7);
    const validate: ToolCatalog['validate'] = (schema, args) => this.deps.catalog.validate(schema, args);
    const guard = guardContext(state, turn, agent, tools, validate);
    const verdicts = calls.map((c) => this.judge(c, guard, log));
    const command = recordModelOutput({
      turnId: turn.turnId,
      step,
      output,
      calls,
      verdicts,
      priced,
      at,
      newId: uuidv7,
    });
    await this.record(call, command, output, priced);
  }

  /** Streams the model's answer (deltas on the bus); undefined when the call was cancelled or failed the turn. */
  private async callModel(
    call: StepCall,
    tenant: TenantConfig,
    agent: AgentDefinition,
    tools: ResolvedTool[],
    state: Conversation,
  ): Promise<ModelStepOutput | undefined> {
    const { tenantId, conversationId, turn, step, version } = call;
    const key = `${tenantId}/${conversationId}`;
    const controller = new AbortController();
    this.inFlight.set(key, { turnId: turn.turnId, controller });
    const model = turn.agent.model;
    const startedAt = performance.now();
    const seconds = (): number => (performance.now() - startedAt) / 1000;
    let seq = 0;
    try {
      const output = await this.deps.modelStep({
        model,
        credentials: this.credentials(tenant, tenantId, model),
        messages: promptOf(agent, tools, state, tenant, turnIntent(agent, turn)),
        tools,
        temperature: turn.agent.temperature ?? agent.temperature,
        ...modelOptionsOf(agent, (fallback) => this.credentials(tenant, tenantId, fallback)),
        signal: controller.signal,
        onDelta: (text) => {
          this.timings.token(turn.turnId, model);
          const delta = { type: 'delta', turnId: turn.turnId, step, seq: ++seq, text, version };
          this.deps.bus.ephemeral.publish({ kind: 'deltas', tenantId, conversationId }, delta);
        },
      });
      this.metrics.modelCall(model, 'ok', seconds());
      return output;
    } catch (error) {
      this.metrics.modelCall(model, controller.signal.aborted ? 'cancelled' : 'error', seconds());
      await this.modelCallFailed(call, error, controller.signal.aborted);
      return undefined;
    } finally {
      if (this.inFlight.get(key)?.controller === controller) this.inFlight.delete(key);
    }
  }

  /** A cancelled call ends quietly (the cancel recorded the turn's end); any other failure fails the turn. */
  private async modelCallFailed(call: StepCall, error: unknown, aborted: boolean): Promise<void> {
    if (aborted) {
      this.deps.logger.info(call.log, 'model call aborted: the turn was cancelled');
      return;
    }
    this.deps.logger.warn({ ...call.log, err: error }, 'model call failed; failing the turn');
    await this.fail(call.ctx, call.conversationId, call.turn, modelFailureCode(error), messageOf(error));
  }

  /** The guard's verdict on one call, logging a call that could not be checked at all. */
  private judge(call: KeptToolCall, guard: GuardContext, log: object): ToolCallVerdict {
    const { verdict, uncheckable } = judgeToolCall(call, guard);
    if (uncheckable !== undefined) {
      const tool = String(call.name).slice(0, 64);
      this.deps.logger.warn({ ...log, err: uncheckable, tool }, 'tool call refused: not checkable');
    }
    return verdict;
  }

  /** Records the step's output, then counts its usage and publishes the context fill after it. */
  private async record(
    call: StepCall,
    command: ConversationCommand,
    output: ModelStepOutput,
    priced: PricedUsage,
  ): Promise<void> {
    const { tenantId, conversationId, turn, step, log } = call;
    let recorded: { version: number };
    try {
      recorded = await this.deps.conversations.run(call.ctx, conversationId, command);
    } catch (error) {
      if (!(error instanceof ConversationConflictError)) throw error;
      this.deps.logger.info(
        { ...log, reason: error.message },
        'model output not recorded: the turn moved on',
      );
      return;
    }
    this.deps.logger.info(
      { ...log, toolCalls: output.toolCalls.length, model: output.model },
      'model step recorded',
    );
    // Labelled with the agent's model, as the call's latency is: a provider's own name for it
    // (`output.model`, dated versions) is not a label an operator chose, nor a bounded one.
    this.metrics.modelUsage(turn.agent.model, output.usage, priced.costUsd);
    this.deps.bus.ephemeral.publish(
      { kind: 'deltas', tenantId, conversationId },
      {
        type: 'context',
        turnId: turn.turnId,
        step,
        contextTokens: output.contextTokens,
        windowTokens: priced.windowTokens,
        version: recorded.version,
      },
    );
  }

  /** The call's cost and the model's window from pricing; unpriced (with a warning saying why) when it cannot. */
  private async priceUsage(output: ModelStepOutput, at: string, log: object): Promise<PricedUsage> {
    const priced = this.deps.pricing
      ? await this.deps.pricing.price({ model: output.model, ...output.usage, at })
      : { costUsd: null, reason: 'no pricing service configured', windowTokens: null };
    if (priced.costUsd === null) {
      this.deps.logger.warn({ ...log, model: output.model, reason: priced.reason }, 'model call not priced');
    }
    return priced;
  }

  private async fail(
    ctx: CallContext,
    conversationId: string,
    turn: CurrentTurn,
    code: string,
    message: string,
  ) {
    await this.deps.conversations
      .run(ctx, conversationId, {
        type: 'FailTurn',
        turnId: turn.turnId,
        error: { code, message },
        at: new Date().toISOString(),
      })
      .catch((e: unknown) => {
        if (!(e instanceof ConversationConflictError)) throw e;
      });
  }

  /** The tenant's own key for the model's provider (opened in memory only), else none (env defaults apply). */
  private credentials(tenant: TenantConfig, tenantId: string, model: string): ProviderCredentials {
    const provider = model.slice(0, model.indexOf(':')) as keyof TenantConfig['providers'];
    const configured = tenant.providers[provider];
    if (!configured) return {};
    const apiKey =
      configured.apiKey && this.deps.secrets
        ? this.deps.secrets.open(configured.apiKey, `${tenantId}/provider/${provider}`)
        : undefined;
    return { ...(apiKey ? { apiKey } : {}), ...(configured.baseUrl ? { baseUrl: configured.baseUrl } : {}) };
  }
}

/** The step after `turn`'s last one, run on the conversation at `version` because of `trigger`. */
const stepCall = (trigger: RecordedEvent, turn: CurrentTurn, version: number): StepCall => {
  const ctx = systemContext(trigger, 'agent');
  const tenantId = trigger.tenantId;
  const conversationId = parseStreamName(trigger.streamName).id;
  const step = turn.step + 1;
  const log = { tenantId, conversationId, turnId: turn.turnId, step, correlationId: ctx.correlationId };
  return { tenantId, conversationId, turn, step, version, log, ctx };
};

/** The error code a failed model call ends its turn with. */
const modelFailureCode = (error: unknown): string =>
  // A tenant baseUrl the egress policy refuses: the same word as a refused webhook's.
  error instanceof EgressDeniedError
    ? 'egress_denied'
    : error instanceof KeelError
      ? `provider_${error.code.toLowerCase()}`
      : 'provider_error';

/** The context of an action the platform takes itself, tied to the request that caused it. */
const systemContext = (event: RecordedEvent, service: string): CallContext => ({
  tenantId: event.tenantId,
  keyId: `system:${service}`,
  role: 'admin',
  userId: `system:${service}`,
  correlationId: event.metadata.correlationId ?? event.eventId,
});
