import type {
  Consumer,
  Delivery,
  EphemeralSubscription,
  EventBus,
  EventStore,
  RecordedEvent,
} from '@keel/core';
import {
  KeelError,
  exceedsJsonDepth,
  isEvent,
  messageOf,
  ownValue,
  parseStreamName,
  uuidv7,
} from '@keel/core';
import type { ToolCallExecuted } from '@keel/events';
import { CONVERSATION_CATEGORY, TOOL_CALL_CATEGORY, turnIdOf } from '@keel/events';
import type { SecretBox } from '@keel/runtime';
import { EgressDeniedError } from '@keel/runtime';
import type { ToolCallVerdict } from '../conversation/conversation.commands.js';
import { ConversationConflictError } from '../conversation/conversation.decider.js';
import type { Conversation, CurrentTurn } from '../conversation/conversation.state.js';
import { guardToolCall } from '../guard/tool-guard.js';
import type { ModelStep, ModelStepOutput, ProviderCredentials } from '../model/model-step.js';
import type { PricedUsage, UsagePricing } from '../pricing/usage-pricing.js';
import { promptMessages } from '../prompt/prompt.js';
import type { TenantConfig } from '../tenant-config/tenant-config.decider.js';
import type { CallContext } from '../call-context.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { TurnMetrics } from './turn-metrics.js';
import { NO_TURN_METRICS, TurnTimings } from './turn-metrics.js';
import type { ToolCatalog } from './tool-catalog.js';
import { resolveTools } from './tool-catalog.js';
import type { LogPort } from '@keel/core';

/** Deepest tool-call arguments a model may send (deeper ones are refused to the model). */
const MAX_ARGS_DEPTH = 32;
/** Events after which a turn may need its next model step. */
const TRIGGERS = new Set(['TurnStarted', 'ToolCallCompleted']);

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

  constructor(private readonly deps: TurnWorkerDeps) {
    this.metrics = deps.metrics ?? NO_TURN_METRICS;
    this.timings = new TurnTimings(this.metrics);
  }

  async start(): Promise<void> {
    const { bus } = this.deps;
    this.cancelSubscription = bus.ephemeral.subscribe({ kind: 'cancel' }, ({ topic, data }) => {
      const running = this.inFlight.get(`${topic.tenantId}/${topic.conversationId}`);
      if (running && running.turnId === (data as { turnId?: string }).turnId) running.controller.abort();
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
        { name: 'agent-tool-results', filter: { category: TOOL_CALL_CATEGORY }, maxInFlight: 32 },
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
    if (!TRIGGERS.has(event.type)) return;
    const { store, conversations } = this.deps;
    const turnId = turnIdOf(event);
    // One view of the stream: the state as loaded, and the events after this trigger up to it.
    const { state, version } = await conversations.handler.load(event.tenantId, event.streamName);
    const later =
      version > event.version
        ? await store.read(event.tenantId, event.streamName, {
            fromVersion: event.version + 1,
            toVersion: version,
          })
        : [];
    // Only the turn's last trigger acts: a later one (another tool result, in this commit or a
    // newer one) does, so a step is never started twice. A step after this trigger: done already.
    const ofTurn = (e: RecordedEvent): boolean => turnIdOf(e) === turnId;
    if (later.some((e) => ofTurn(e) && (TRIGGERS.has(e.type) || e.type === 'AssistantMessageCompleted')))
      return;
    const turn = state.turn;
    if (!turn || turn.turnId !== turnId) return;
    if (turn.toolCalls.some((c) => c.state !== 'completed') || turn.step >= turn.agent.maxSteps) return;
    await this.runStep(event, state, turn, version);
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
    const { config, conversations, bus, logger } = this.deps;
    const tenantId = trigger.tenantId;
    const conversationId = parseStreamName(trigger.streamName).id;
    const ctx = systemContext(trigger, 'agent');
    const step = turn.step + 1;
    const log = { tenantId, conversationId, turnId: turn.turnId, step, correlationId: ctx.correlationId };

    const tenant = await config.load(tenantId);
    const agent = ownValue(tenant.agents, turn.agent.agentId);
    if (!agent) {
      await this.fail(
        ctx,
        conversationId,
        turn,
        'agent_not_found',
        `agent ${turn.agent.agentId} no longer exists`,
      );
      return;
    }
    const tools = resolveTools(agent.tools, tenant, this.deps.catalog);
    const key = `${tenantId}/${conversationId}`;
    const controller = new AbortController();
    this.inFlight.set(key, { turnId: turn.turnId, controller });
    let seq = 0;
    let output: ModelStepOutput;
    const model = turn.agent.model;
    const callStartedAt = performance.now();
    const callSeconds = (): number => (performance.now() - callStartedAt) / 1000;
    try {
      output = await this.deps.modelStep({
        model: turn.agent.model,
        credentials: this.credentials(tenant, tenantId, turn.agent.model),
        messages: promptMessages(agent, tools, state),
        tools,
        temperature: agent.temperature,
        signal: controller.signal,
        onDelta: (text) => {
          this.timings.token(turn.turnId, model);
          bus.ephemeral.publish(
            { kind: 'deltas', tenantId, conversationId },
            { type: 'delta', turnId: turn.turnId, step, seq: ++seq, text, version },
          );
        },
      });
      this.metrics.modelCall(model, 'ok', callSeconds());
    } catch (error) {
      this.metrics.modelCall(model, controller.signal.aborted ? 'cancelled' : 'error', callSeconds());
      if (controller.signal.aborted) {
        logger.info(log, 'model call aborted: the turn was cancelled');
        return;
      }
      logger.warn({ ...log, err: error }, 'model call failed; failing the turn');
      // A tenant baseUrl the egress policy refuses: the same word as a refused webhook's.
      const code =
        error instanceof EgressDeniedError
          ? 'egress_denied'
          : error instanceof KeelError
            ? `provider_${error.code.toLowerCase()}`
            : 'provider_error';
      await this.fail(ctx, conversationId, turn, code, messageOf(error));
      return;
    } finally {
      if (this.inFlight.get(key)?.controller === controller) this.inFlight.delete(key);
    }
    // The usage instant selects the price in force; it is also the recorded output's `at`.
    const at = new Date().toISOString();
    const priced = await this.priceUsage(output, at, log);

    // Providers' call ids are not unique (the demo model's repeat, some providers have none); the
    // ledger and Idempotency-Key need ids unique per tenant, so each call gets a Keel id, which the
    // transcript then uses on both sides (assistant tool_calls and tool results).
    // Arguments nested past MAX_ARGS_DEPTH would overflow every recursive reader (the validator,
    // the event log's JSON): such a call keeps a note instead, and the guard refuses it.
    const calls = output.toolCalls.map((c) => ({
      ...c,
      ...(exceedsJsonDepth(c.args, MAX_ARGS_DEPTH)
        ? { args: `(arguments nested deeper than ${MAX_ARGS_DEPTH} levels, not kept)` }
        : {}),
      toolCallId: uuidv7(),
    }));
    const verdicts: ToolCallVerdict[] = calls.map((call) => {
      // Whatever the model named or sent, the verdict is one the model sees: a throw here would
      // redeliver the step (a paid model call each time) until it is dead-lettered.
      try {
        const tool = tools.find((t) => t.name === call.name);
        const argErrors =
          typeof call.args === 'string'
            ? [{ path: '', message: `arguments are not valid JSON: ${call.args.slice(0, 200)}` }]
            : tool
              ? this.deps.catalog.validate(tool.inputSchema, call.args)
              : [];
        return guardToolCall({
          name: call.name,
          argErrors,
          tool,
          agent: { tools: agent.tools, ...(agent.phases ? { phases: agent.phases } : {}) },
          role: turn.role,
          phase: state.phase ?? agent.phases?.initial,
        });
      } catch (error) {
        logger.warn(
          { ...log, err: error, tool: String(call.name).slice(0, 64) },
          'tool call refused: not checkable',
        );
        return {
          kind: 'refuse',
          error: {
            code: 'invalid_tool_call',
            message: `the call to "${String(call.name).slice(0, 64)}" could not be checked; do the task without it.`,
          },
        };
      }
    });
    let recorded: { version: number };
    try {
      recorded = await conversations.run(ctx, conversationId, {
        type: 'RecordModelOutput',
        turnId: turn.turnId,
        step,
        messageId: uuidv7(),
        text: output.text,
        toolCalls: calls.map((c, i) => ({ ...c, verdict: verdicts[i]! })),
        usage: {
          model: output.model,
          promptTokens: output.usage.promptTokens,
          completionTokens: output.usage.completionTokens,
          cacheReadTokens: output.usage.cacheReadTokens,
          cacheWriteTokens: output.usage.cacheWriteTokens,
          // null only when pricing could not price it, with the reason: never a silent 0.
          costUsd: priced.costUsd,
          ...(priced.reason !== undefined ? { costReason: priced.reason } : {}),
        },
        approvalIds: Object.fromEntries(calls.map((c) => [c.toolCallId, uuidv7()])),
        at,
      });
    } catch (error) {
      if (error instanceof ConversationConflictError) {
        logger.info({ ...log, reason: error.message }, 'model output not recorded: the turn moved on');
        return;
      }
      throw error;
    }
    logger.info({ ...log, toolCalls: calls.length, model: output.model }, 'model step recorded');
    // Labelled with the agent's model, as the call's latency is: a provider's own name for it
    // (`output.model`, dated versions) is not a label an operator chose, nor a bounded one.
    this.metrics.modelUsage(model, output.usage, priced.costUsd);
    bus.ephemeral.publish(
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

/** The context of an action the platform takes itself, tied to the request that caused it. */
const systemContext = (event: RecordedEvent, service: string): CallContext => ({
  tenantId: event.tenantId,
  keyId: `system:${service}`,
  role: 'admin',
  userId: `system:${service}`,
  correlationId: event.metadata.correlationId ?? event.eventId,
});
