import type {
  Consumer,
  Delivery,
  EphemeralSubscription,
  EventBus,
  EventStore,
  RecordedEvent,
} from '@keel/core';
import { UnavailableError, parseStreamName, streamName } from '@keel/core';
import { CONVERSATION_CATEGORY, TOOL_CALL_CATEGORY, turnIdOf } from '@keel/events';
import type { KeelLogger, SecretBox } from '@keel/runtime';
import { withLogContext } from '@keel/runtime';
import type { BuiltinTool } from '@keel/tooling';
import { ToolCallCancelledError, executeToolCall } from '../execution/index.js';
import type {
  ToolCallDependencies,
  ToolCallLedger,
  ToolCallResult,
  ToolError,
  ToolOutcome,
} from '../execution/index.js';
import type { CallTrigger, RequestedCall, SkipReason } from './call-trigger.js';
import { findRequest, outcomeMayBeRecorded, requestedCall, skipReason, triggerOf } from './call-trigger.js';
import { recordToolCallExecuted } from './record-outcome.js';
import type { RunningCall } from './running-calls.js';
import { RunningCalls } from './running-calls.js';
import type { TenantTools } from './tenant-tools.js';
import type { ResolvedTool } from './tenant-tools.js';
import { resolveTool } from './tenant-tools.js';

/** Durable name of the tools service's consumer of conversation events. */
export const TOOL_CALL_CONSUMER = 'tools';

/** What the consumer works with. */
export interface ToolCallConsumerDeps {
  store: EventStore;
  /** Consumers started through `infra.bus` are drained at shutdown. */
  bus: EventBus;
  ledger: ToolCallLedger;
  webhooks: ToolCallDependencies['webhooks'];
  /** Runs MCP tool calls (McpExecutor); without it MCP calls fail as misconfigured. */
  mcp?: ToolCallDependencies['mcp'];
  tenantTools: { get(tenantId: string): Promise<TenantTools> };
  /** Opens tenants' webhook secrets; without it webhook calls fail as misconfigured. */
  secrets?: Pick<SecretBox, 'open'>;
  logger: KeelLogger;
  builtins?: readonly BuiltinTool[];
  now?: () => Date;
  /** Told the latency of each call run, by tool kind and outcome (the service's metrics). */
  metrics?: ToolCallMetrics;
}

/** What the consumer reports about the calls it runs (the runtime's `ServiceMetrics` implements it). */
export interface ToolCallMetrics {
  /** `kind`: webhook, builtin, or unknown (no such tool); `outcome`: ok, error, or refused (approval missing). */
  toolCall(kind: string, outcome: 'ok' | 'error' | 'refused', seconds: number): void;
}

/** Settings of the durable consumer; the defaults suit production. */
export interface ToolCallConsumerOptions {
  /** Default `tools`. */
  name?: string;
  /** Calls run at once across this consumer's instances (default 32: a slow webhook blocks no one else). */
  maxInFlight?: number;
  /** Silence after which a delivery goes to another instance (default 10 s; kept alive while a call runs). */
  ackWaitMs?: number;
  maxDeliver?: number;
  backoffMs?: number[];
}

type Outcome = ToolOutcome & { execution?: ToolCallResult['execution']; kind?: string };

/** A call to run, and the check (still running) that it is still wanted: it rejects with CallNotWanted. */
interface CallToRun {
  call: RequestedCall;
  wanted: Promise<void>;
}

/** The events after a request make running it pointless (see `skipReason`): nothing runs, nothing is recorded. */
class CallNotWanted extends Error {
  constructor(readonly reason: SkipReason) {
    super(`tool call not run: ${reason}`);
  }
}

/**
 * Executes the tool calls of conversations (DESIGN.md "The flow of one turn", step 6): reads
 * `ToolCallRequested` (and `ApprovalDecided` approvals) from a shared durable consumer, runs each
 * call once through `executeToolCall` (ledger keyed by toolCallId, `Idempotency-Key` on webhooks),
 * and records the outcome as `ToolCallExecuted`, the only event of `toolcall-<toolCallId>`
 * (`no_stream`). A redelivered trigger finds the outcome (stream or ledger) and runs nothing again;
 * a call whose executor died runs again under the same key. Cancel signals abort a turn's calls.
 */
export class ToolCallConsumer {
  readonly #deps: ToolCallConsumerDeps;
  readonly #options: ToolCallConsumerOptions;
  readonly #log: KeelLogger;
  /** The calls running here, for cancel signals and shutdown. */
  readonly #runningCalls = new RunningCalls();
  /** The run of each call in this process, so two triggers of one call never run it side by side here. */
  readonly #running = new Map<string, Promise<void>>();
  #consumer: Consumer | undefined;
  #cancelSubscription: EphemeralSubscription | undefined;
  #stopping = false;

  constructor(deps: ToolCallConsumerDeps, options: ToolCallConsumerOptions = {}) {
    this.#deps = deps;
    this.#options = options;
    this.#log = deps.logger;
  }

  /** Subscribes to cancel signals, then starts consuming conversation events. */
  async start(): Promise<void> {
    if (this.#consumer) return;
    this.#stopping = false;
    this.#cancelSubscription = this.#deps.bus.ephemeral.subscribe({ kind: 'cancel' }, ({ topic, data }) => {
      const turnId = turnIdOf({ data });
      if (turnId === undefined) return;
      this.#runningCalls.abortTurn(topic.tenantId, topic.conversationId, turnId);
    });
    this.#consumer = await this.#deps.bus.consume(
      {
        name: this.#options.name ?? TOOL_CALL_CONSUMER,
        filter: { category: CONVERSATION_CATEGORY },
        maxInFlight: this.#options.maxInFlight ?? 32,
        ackWaitMs: this.#options.ackWaitMs ?? 10_000,
        maxDeliver: this.#options.maxDeliver ?? 10,
        backoffMs: this.#options.backoffMs ?? [500, 2_000, 10_000, 30_000],
        // The ledger and the `no_stream` append make handling idempotent; an inbox adds nothing.
        idempotency: 'none',
      },
      (delivery) => this.#onEvent(delivery),
    );
  }

  /**
   * Stops taking calls and waits for the running ones. After `graceMs` the calls still running
   * are aborted: nothing is recorded for them, their deliveries go back to the bus, and whichever
   * instance takes them next runs them again with the same Idempotency-Key.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    this.#stopping = true;
    const consumer = this.#consumer;
    this.#consumer = undefined;
    const timer =
      options.graceMs === undefined
        ? undefined
        : setTimeout(() => this.#runningCalls.abortAll(), options.graceMs);
    try {
      await consumer?.stop();
    } finally {
      clearTimeout(timer);
      this.#cancelSubscription?.unsubscribe();
      this.#cancelSubscription = undefined;
      // No call runs any more: the MCP sessions kept for the next ones are ended (DELETE).
      await this.#deps.mcp?.close?.();
    }
  }

  async #onEvent(delivery: Delivery): Promise<void> {
    const { event } = delivery;
    const trigger = triggerOf(event);
    if (!trigger) return;
    if (this.#stopping)
      throw new UnavailableError('the tools service is stopping; the call goes back to the bus');
    const key = `${event.tenantId}\u0000${trigger.toolCallId}`;
    // One run per call in this process: a second trigger waits, then finds the outcome recorded.
    for (let earlier = this.#running.get(key); earlier; earlier = this.#running.get(key)) {
      await earlier.catch(() => undefined);
    }
    const run = this.#run(event, trigger, outcomeMayBeRecorded(delivery));
    this.#running.set(key, run);
    try {
      await run;
    } finally {
      if (this.#running.get(key) === run) this.#running.delete(key);
    }
  }

  async #run(event: RecordedEvent, trigger: CallTrigger, askLogFirst: boolean): Promise<void> {
    const { tenantId } = event;
    const conversationId = parseStreamName(event.streamName).id;
    const { toolCallId, turnId } = trigger;
    const log = withLogContext(this.#log, {
      tenantId,
      conversationId,
      correlationId: event.metadata.correlationId,
    }).child({ toolCallId, turnId });
    // Tracked before the log is read: a cancel published after TurnCancelled was appended either
    // finds this execution, or came before the read below, which then sees the TurnCancelled.
    const running = this.#runningCalls.add(tenantId, conversationId, turnId);
    let call: RequestedCall | undefined;
    try {
      const toRun = await this.#callToRun(event, toolCallId, askLogFirst, log);
      if (!toRun) return;
      call = toRun.call;
      let recorded = false;
      const record = async (outcome: Outcome): Promise<void> => {
        // Nothing is recorded for a call whose turn turned out to be cancelled.
        await toRun.wanted;
        await this.#record(event, conversationId, toRun.call, outcome, log);
        recorded = true;
      };
      const outcome = await this.#execute(tenantId, conversationId, toRun, trigger, running, record, log);
      if (!recorded) await record(outcome);
    } catch (error) {
      if (error instanceof CallNotWanted) {
        log.info({ tool: call?.name, reason: error.reason }, 'tool call not run');
        return;
      }
      if (
        error instanceof ToolCallCancelledError &&
        call &&
        (await this.#turnWasCancelled(event, call, running, log))
      )
        return;
      throw error;
    } finally {
      this.#runningCalls.release(tenantId, conversationId, turnId, running);
    }
  }

  /**
   * The requested call when it is still to run, and the check that it still is (`wanted`). A
   * redelivery first asks the log whether the outcome is recorded (then nothing more is read); a
   * first delivery does not — should it be a late duplicate, the ledger answers the recorded
   * outcome and the `no_stream` append finds it recorded, so nothing runs or is recorded twice.
   * A request in hand is checked against the events after it while the call is claimed (its
   * turn cancelled, its result recorded: CallNotWanted); an approval finds its request first.
   */
  async #callToRun(
    event: RecordedEvent,
    toolCallId: string,
    askLogFirst: boolean,
    log: KeelLogger,
  ): Promise<CallToRun | undefined> {
    const { store } = this.#deps;
    const outcomeStream = streamName(TOOL_CALL_CATEGORY, toolCallId);
    if (askLogFirst && (await store.streamVersion(event.tenantId, outcomeStream)) > 0) {
      log.debug({ trigger: event.type }, 'tool call outcome already recorded');
      return undefined;
    }
    const own = requestedCall(event);
    if (own) {
      const wanted = store
        .read(event.tenantId, event.streamName, {
          fromVersion: event.version + 1,
          fromCommit: event.commitId,
        })
        .then((later) => {
          const skip = skipReason(later, own);
          if (skip) throw new CallNotWanted(skip);
        });
      // Awaited by the execution and before recording; never left unhandled meanwhile.
      wanted.catch(() => undefined);
      return { call: own, wanted };
    }
    // An approval: its request came earlier in the same conversation.
    const events = await store.read(event.tenantId, event.streamName);
    const call = findRequest(events, toolCallId);
    if (!call) {
      log.warn({ trigger: event.type }, 'no ToolCallRequested for this tool call; nothing to run');
      return undefined;
    }
    const skip = skipReason(
      events.filter((e) => e.version > call.version),
      call,
    );
    if (skip) {
      log.info({ tool: call.name, reason: skip }, 'tool call not run');
      return undefined;
    }
    return { call, wanted: Promise.resolve() };
  }

  /** Counts the outcome (unless answered from the ledger: counted when it ran) and records it in the log. */
  async #record(
    event: RecordedEvent,
    conversationId: string,
    call: RequestedCall,
    outcome: Outcome,
    log: KeelLogger,
  ): Promise<void> {
    if (outcome.execution !== 'replayed') {
      this.#deps.metrics?.toolCall(
        outcome.kind ?? 'unknown',
        outcome.execution === 'refused' ? 'refused' : outcome.ok ? 'ok' : 'error',
        outcome.durationMs / 1000,
      );
    }
    const at = this.#deps.now?.() ?? new Date();
    const recorded = await recordToolCallExecuted(this.#deps.store, {
      trigger: event,
      conversationId,
      call,
      outcome,
      at,
    });
    if (recorded === 'recorded-too-large') {
      log.warn({ tool: call.name }, 'tool result too large for the log; recorded as a tool error');
    }
    log.info(
      {
        tool: call.name,
        ok: outcome.ok,
        attempts: outcome.attempts,
        durationMs: outcome.durationMs,
        execution: outcome.execution,
        ...(outcome.ok ? {} : { errorCode: outcome.error.code }),
        ...(recorded === 'already-recorded' ? { recordedBy: 'another instance' } : {}),
      },
      'tool call executed',
    );
  }

  /** A call aborted by a cancel signal: true when its turn was cancelled (nothing to record); else it goes back to the bus. */
  async #turnWasCancelled(
    event: RecordedEvent,
    call: RequestedCall,
    running: RunningCall,
    log: KeelLogger,
  ): Promise<boolean> {
    if (running.reason === 'turn-cancelled' && (await this.#turnCancelled(event, call))) {
      log.info({ tool: call.name }, 'tool call aborted: its turn was cancelled; nothing recorded');
      return true;
    }
    log.info({ tool: call.name, reason: running.reason }, 'tool call aborted; it goes back to the bus');
    return false;
  }

  async #turnCancelled(trigger: RecordedEvent, call: RequestedCall): Promise<boolean> {
    const later = await this.#deps.store.read(trigger.tenantId, trigger.streamName, {
      fromVersion: call.version + 1,
    });
    return skipReason(later, call) === 'turn-cancelled';
  }

  async #execute(
    tenantId: string,
    conversationId: string,
    { call, wanted }: CallToRun,
    trigger: CallTrigger,
    running: RunningCall,
    record: (outcome: Outcome) => Promise<void>,
    log: KeelLogger,
  ): Promise<Outcome> {
    const deps = this.#deps;
    const tenant = await deps.tenantTools.get(tenantId);
    const tool = resolveTool(call.name, tenant, deps.builtins);
    if (!tool) return { ...failure('unknown_tool', `there is no tool named ${call.name}`), kind: 'unknown' };
    const credentials = this.#credentials(tenantId, tool, call.name, log);
    if ('refusal' in credentials) return { ...credentials.refusal, kind: tool.kind };
    const { webhookSecret, mcpHeaders } = credentials;
    // A `refused` result (the tool needs an approval now, though the call was requested without
    // one) is recorded too: nothing ran, and the turn goes on instead of waiting for an approval
    // nobody was asked for.
    const result = await executeToolCall(
      {
        tenantId,
        conversationId,
        toolCallId: call.toolCallId,
        name: call.name,
        args: call.args,
        tool: tool.definition,
        approvalGranted: trigger.approvalGranted,
        ...(call.caller ? { caller: call.caller } : {}),
        ...(webhookSecret === undefined ? {} : { webhookSecret }),
        ...(mcpHeaders === undefined ? {} : { mcpHeaders }),
      },
      {
        ledger: deps.ledger,
        webhooks: deps.webhooks,
        ...(deps.mcp ? { mcp: deps.mcp } : {}),
        ...(deps.builtins ? { builtins: deps.builtins } : {}),
        ...(deps.now ? { now: deps.now } : {}),
        onUnexpectedError: (error) => log.error({ tool: call.name, err: error }, 'built-in tool failed'),
      },
      {
        signal: running.controller.signal,
        wanted,
        // A fresh outcome is appended to the log while the ledger records it (one round trip).
        recordAlongside: (fresh) => record({ ...fresh, kind: tool.kind }),
      },
    );
    return { ...result, kind: tool.kind };
  }

  /** What the call needs opened: the tenant's webhook secret, an MCP server's headers; or why not. */
  #credentials(
    tenantId: string,
    tool: NonNullable<ReturnType<typeof resolveTool>>,
    name: string,
    log: KeelLogger,
  ): { webhookSecret?: string; mcpHeaders?: Record<string, string> } | { refusal: Outcome } {
    const secret = this.#webhookSecret(tenantId, tool, name, log);
    if (!secret.opened) {
      return {
        refusal: failure('tool_misconfigured', `the tools service could not sign the call to ${name}`),
      };
    }
    const mcpHeaders = this.#mcpHeaders(tenantId, tool, log);
    if (mcpHeaders === false) {
      const detail = `the tools service could not open the headers of ${name}'s server`;
      return { refusal: failure('tool_misconfigured', detail) };
    }
    return {
      ...(secret.webhookSecret === undefined ? {} : { webhookSecret: secret.webhookSecret }),
      ...(mcpHeaders === undefined ? {} : { mcpHeaders }),
    };
  }

  /** An MCP tool's server headers, opened (sealed as one JSON object); false when they do not open. */
  #mcpHeaders(
    tenantId: string,
    tool: ResolvedTool,
    log: KeelLogger,
  ): Record<string, string> | undefined | false {
    if (tool.kind !== 'mcp' || !tool.headers) return undefined;
    try {
      if (!this.#deps.secrets) throw new Error('KEEL_MASTER_KEY is not set');
      return JSON.parse(
        this.#deps.secrets.open(tool.headers, mcpHeadersContext(tenantId, tool.server)),
      ) as Record<string, string>;
    } catch (error) {
      log.error(
        { server: tool.server, reason: error instanceof Error ? error.message : 'unknown' },
        'the MCP server headers do not open',
      );
      return false;
    }
  }

  /** A webhook tool's signing secret, opened (none for other tools or an unsigned webhook). */
  #webhookSecret(
    tenantId: string,
    tool: ResolvedTool,
    name: string,
    log: KeelLogger,
  ): { opened: true; webhookSecret?: string } | { opened: false } {
    if (tool.kind !== 'webhook' || !tool.webhookSecret) return { opened: true };
    try {
      if (!this.#deps.secrets) throw new Error('KEEL_MASTER_KEY is not set');
      return {
        opened: true,
        webhookSecret: this.#deps.secrets.open(tool.webhookSecret, `${tenantId}/webhook`),
      };
    } catch (error) {
      // A platform fault (master key), not the tenant's: the operator reads why, the model only that it failed.
      log.error(
        { tool: name, reason: error instanceof Error ? error.message : 'unknown' },
        'the tenant webhook secret does not open',
      );
      return { opened: false };
    }
  }
}

/** The context an MCP server's headers are sealed under (the agent seals them at PUT). */
export const mcpHeadersContext = (tenantId: string, server: string): string => `${tenantId}/mcp/${server}`;

const failure = (code: string, message: string): Outcome => ({
  ok: false,
  error: { code, message } satisfies ToolError,
  attempts: 0,
  durationMs: 0,
});
