import { KeelError, ValidationError, exceedsJsonDepth } from '@keel/core';
import { BUILTIN_TOOLS, BuiltinToolError } from '@keel/tooling';
import type { BuiltinTool } from '@keel/tooling';
import { approvalFor, defaultArgsValidator, formatArgsProblems } from '@keel/tooling';
import type { ArgsValidator } from '@keel/tooling';
import type { ToolCallLedger } from './ledger.js';
import type { CallCaller, JsonSchema, ToolDefinition, ToolError, ToolOutcome } from './types.js';
import { ToolCallCancelledError } from './webhook-executor.js';
import type { WebhookRequest, WebhookResult } from './webhook-executor.js';
import type { McpCallRequest, McpCallResult } from './mcp-executor.js';

/** One tool call as the tools service's consumer hands it over. */
export interface ToolCallRequest {
  tenantId: string;
  conversationId: string;
  /** Unique within the tenant; the ledger key and the webhook's Idempotency-Key. */
  toolCallId: string;
  /** The tool the model called. */
  name: string;
  /** The model's arguments, unchecked. */
  args: unknown;
  /** The tenant's definition of the tool (for a built-in, its kind and approval policy matter). */
  tool: ToolDefinition;
  /** True when a user approved this call (only consulted for `approval: 'always'`). */
  approvalGranted: boolean;
  /** The tenant's webhook secret; required for webhook tools. */
  webhookSecret?: string;
  /** An MCP tool's server headers, opened. */
  mcpHeaders?: Record<string, string>;
  /** The turn's end user and the conversation's metadata (API.md "The end user"); sent with the call. */
  caller?: CallCaller;
}

/** What `executeToolCall` works with. */
export interface ToolCallDependencies {
  ledger: ToolCallLedger;
  webhooks: { call(request: WebhookRequest): Promise<WebhookResult> };
  /** Runs MCP tool calls; without it an MCP tool's call fails as misconfigured. `close` ends its kept sessions. */
  mcp?: { call(request: McpCallRequest): Promise<McpCallResult>; close?(): Promise<void> };
  validator?: ArgsValidator;
  builtins?: readonly BuiltinTool[];
  now?: () => Date;
  /** Told about a built-in's unexpected failure (for the logs); the model only reads `builtin_failed`. */
  onUnexpectedError?: (error: unknown, request: ToolCallRequest) => void;
}

/** How one execution is run. */
export interface ToolCallOptions {
  /** Aborts the call (a cancel signal, shutdown): ToolCallCancelledError. */
  signal?: AbortSignal;
  /**
   * The caller's last check that the call is still wanted (its turn not cancelled meanwhile),
   * awaited before anything runs or the ledger is answered, and alongside the claim: a rejection
   * stops the call with that error before it runs. The claim may then stay in flight, as after a
   * crash: a later trigger resumes it under the same key.
   */
  wanted?: Promise<void>;
  /**
   * Records an outcome this execution produced (executed or resumed) where the caller keeps it
   * (the conversation's log), while the ledger completes instead of after it. A crash between
   * the two leaves one of them: the log's record (a redelivery finds it there first) or the
   * ledger's (a redelivery is answered from it). Should another executor complete the call first,
   * the two may hold different attempts' outcomes — for a webhook the same answer, by its
   * Idempotency-Key contract. Other outcomes (replayed, refused) are the caller's to record.
   */
  recordAlongside?: (outcome: ToolCallResult) => Promise<void>;
}

/**
 * The outcome, and how it came about: `executed` (first delivery), `resumed` (an earlier attempt
 * was interrupted; run again with the same Idempotency-Key), `replayed` (the ledger already had
 * the outcome; nothing ran), `refused` (approval missing; nothing ran, nothing recorded).
 */
export type ToolCallResult = ToolOutcome & { execution: 'executed' | 'resumed' | 'replayed' | 'refused' };

type Attempted =
  { ok: true; result: unknown; attempts: number } | { ok: false; error: ToolError; attempts: number };

/**
 * Executes a tool call at most once to completion: a completed call is answered from the ledger;
 * an interrupted one runs again under the same key (the webhook contract makes that safe).
 * Arguments are checked before anything runs, and every outcome — results, tool errors, bad
 * arguments — is recorded. Rejects only when cancelled (ToolCallCancelledError; the ledger keeps
 * the call in flight, so a redelivery resumes it) or when the ledger itself fails.
 */
export const executeToolCall = async (
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  options: ToolCallOptions = {},
): Promise<ToolCallResult> => {
  const key = { tenantId: request.tenantId, toolCallId: request.toolCallId };
  const validator = deps.validator ?? defaultArgsValidator;
  const approval = approvalFor(
    request.tool.approval,
    request.args,
    (schema, args) => validator.validate(schema, args).ok,
    request.caller?.user?.role,
  );
  const wanted = options.wanted ?? Promise.resolve();
  if (approval.required && !request.approvalGranted) return refusedWithoutApproval(request, deps, wanted);

  const meta = { conversationId: request.conversationId, name: request.name };
  // Claimed while the caller's last check runs, unless a claim that then never runs would be
  // answered `outcome_unknown` (an MCP call): then the check comes first.
  const begun = unknownOutcomeStays(request.tool)
    ? await wanted.then(() => deps.ledger.begin(key, meta))
    : (await Promise.all([deps.ledger.begin(key, meta), wanted]))[0];
  if (begun.record.outcome) return { ...begun.record.outcome, execution: 'replayed' };
  if (begun.state === 'in-flight' && unknownOutcomeStays(request.tool)) {
    // An MCP call has no idempotency key the server must honour: an earlier attempt may have
    // acted, so it is not sent again unless the server is marked retryUnknown.
    const stored = await deps.ledger.complete(key, OUTCOME_UNKNOWN);
    return { ...(stored.outcome ?? OUTCOME_UNKNOWN), execution: 'replayed' };
  }

  const started = performance.now();
  const attempted = await attempt(request, deps, options.signal);
  const outcome: ToolOutcome = { ...attempted, durationMs: Math.round(performance.now() - started) };
  const execution = begun.state === 'new' ? 'executed' : 'resumed';
  // Two executors racing on one call both get the first recorded outcome.
  const [stored] = await Promise.all([
    deps.ledger.complete(key, outcome),
    options.recordAlongside?.({ ...outcome, execution }),
  ]);
  return { ...(stored.outcome ?? outcome), execution };
};

/** A call that needs an approval it was not given: answered from the ledger if it completed (approved) earlier. */
const refusedWithoutApproval = async (
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  wanted: Promise<void>,
): Promise<ToolCallResult> => {
  const key = { tenantId: request.tenantId, toolCallId: request.toolCallId };
  const [known] = await Promise.all([deps.ledger.get(key), wanted]);
  if (known?.outcome) return { ...known.outcome, execution: 'replayed' };
  // Not recorded: the call has not run, and an approval may still come for it.
  return {
    ok: false,
    error: {
      code: 'approval_required',
      message: `${request.name} needs a user's approval, and it was not given`,
    },
    attempts: 0,
    durationMs: 0,
    execution: 'refused',
  };
};

const attempt = async (
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  signal: AbortSignal | undefined,
): Promise<Attempted> => {
  const { tool } = request;
  if (request.name !== tool.name) {
    return misconfigured(`the call names ${request.name} but the tool definition is ${tool.name}`);
  }
  const builtin =
    tool.kind === 'builtin' ? (deps.builtins ?? BUILTIN_TOOLS).find((b) => b.name === tool.name) : undefined;
  if (tool.kind === 'builtin' && !builtin)
    return misconfigured(`there is no built-in tool named ${tool.name}`);

  // A built-in's own schema is authoritative: tenants cannot redefine built-ins.
  const checked = checkArgs(
    deps.validator ?? defaultArgsValidator,
    builtin?.inputSchema ?? tool.inputSchema,
    request,
  );
  if (checked) return checked;
  if (signal?.aborted) throw new ToolCallCancelledError(signal.reason);

  if (builtin) return runBuiltin(builtin, request, deps, signal);
  return tool.kind === 'mcp' ? callMcp(request, deps, signal) : callWebhook(request, deps, signal);
};

/** Whether a call begun by an attempt that never finished stays unknown instead of running again. */
const unknownOutcomeStays = (tool: ToolDefinition): boolean =>
  tool.kind === 'mcp' && tool.mcp?.retryUnknown !== true;

/** What the model reads of an MCP call whose earlier attempt a crash interrupted. */
export const OUTCOME_UNKNOWN: ToolOutcome = {
  ok: false,
  error: {
    code: 'outcome_unknown',
    message:
      'the call was sent to the MCP server, but the tools service stopped before its answer: it may or may not have taken effect, and it is not sent again',
  },
  attempts: 1,
  durationMs: 0,
};

/** An MCP tool's call: its server URL and timeout checked, then the McpExecutor's answer as the attempt. */
const callMcp = async (
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  signal: AbortSignal | undefined,
): Promise<Attempted> => {
  const { tool } = request;
  if (!tool.url || !tool.mcp) return misconfigured(`the MCP tool ${tool.name} has no server`);
  if (!deps.mcp) return misconfigured('this tools service does not run MCP calls');
  const result = await deps.mcp.call({
    tenantId: request.tenantId,
    url: tool.url,
    ...(request.mcpHeaders ? { headers: request.mcpHeaders } : {}),
    tool: tool.mcp.tool,
    args: request.args,
    toolCallId: request.toolCallId,
    timeoutMs: tool.timeoutMs,
    ...(request.caller ? { caller: request.caller } : {}),
    ...(signal ? { signal } : {}),
  });
  if (result.ok && exceedsJsonDepth(result.result, MAX_RESULT_DEPTH)) {
    return {
      ok: false,
      error: {
        code: 'mcp_invalid_result',
        message: `the MCP server answered JSON nested deeper than ${MAX_RESULT_DEPTH} levels`,
      },
      attempts: result.attempts,
    };
  }
  return result;
};

/** A webhook tool's call: its URL, secret and timeout checked, then the WebhookExecutor's answer as the attempt. */
const callWebhook = async (
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  signal: AbortSignal | undefined,
): Promise<Attempted> => {
  const { tool } = request;
  if (!tool.url) return misconfigured(`the webhook tool ${tool.name} has no URL`);
  if (!request.webhookSecret) {
    return misconfigured(
      'the tenant has no webhook secret, so the call cannot be signed (POST /v1/webhook-secret)',
    );
  }
  if (!Number.isFinite(tool.timeoutMs) || tool.timeoutMs <= 0) {
    return misconfigured(`the tool's timeoutMs must be a positive number of milliseconds`);
  }
  const result = await deps.webhooks.call({
    url: tool.url,
    tenantId: request.tenantId,
    conversationId: request.conversationId,
    toolCallId: request.toolCallId,
    args: request.args,
    ...(request.caller ? { caller: request.caller } : {}),
    timeoutMs: tool.timeoutMs,
    secret: request.webhookSecret,
    signal,
  });
  if (result.ok && exceedsJsonDepth(result.result, MAX_RESULT_DEPTH)) {
    // Deeper would overflow every recursive reader of the outcome (the log's JSON first).
    return {
      ok: false,
      error: {
        code: 'webhook_invalid_json',
        message: `the webhook answered JSON nested deeper than ${MAX_RESULT_DEPTH} levels`,
      },
      attempts: result.attempts,
    };
  }
  return result.ok
    ? { ok: true, result: result.result, attempts: result.attempts }
    : { ok: false, error: result.error, attempts: result.attempts };
};

/** Deepest webhook result kept as a result. */
export const MAX_RESULT_DEPTH = 64;

/** A tool error when the arguments fail the schema (or the schema is broken); undefined when they pass. */
const checkArgs = (
  validator: ArgsValidator,
  schema: JsonSchema,
  request: ToolCallRequest,
): Attempted | undefined => {
  try {
    const verdict = validator.validate(schema, request.args);
    if (verdict.ok) return undefined;
    return {
      ok: false,
      error: { code: 'invalid_arguments', message: formatArgsProblems(verdict.errors) },
      attempts: 0,
    };
  } catch (error) {
    if (error instanceof ValidationError) return misconfigured(`the tool's ${error.message}`);
    throw error;
  }
};

const runBuiltin = async (
  builtin: BuiltinTool,
  request: ToolCallRequest,
  deps: ToolCallDependencies,
  signal: AbortSignal | undefined,
): Promise<Attempted> => {
  try {
    const result: unknown = await builtin.execute(request.args as Record<string, unknown>, {
      tenantId: request.tenantId,
      conversationId: request.conversationId,
      toolCallId: request.toolCallId,
      now: deps.now ?? (() => new Date()),
      signal,
    });
    return { ok: true, result, attempts: 1 };
  } catch (error) {
    if (error instanceof BuiltinToolError)
      return { ok: false, error: { code: error.reason, message: error.message }, attempts: 1 };
    if (error instanceof KeelError) {
      return { ok: false, error: { code: error.code.toLowerCase(), message: error.message }, attempts: 1 };
    }
    // An unexpected failure's details stay out of what the model (and the end user) reads.
    deps.onUnexpectedError?.(error, request);
    return {
      ok: false,
      error: { code: 'builtin_failed', message: `the built-in tool ${builtin.name} failed` },
      attempts: 1,
    };
  }
};

const misconfigured = (message: string): Attempted => ({
  ok: false,
  error: { code: 'tool_misconfigured', message },
  attempts: 0,
});
