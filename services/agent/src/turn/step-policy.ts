import type { RecordedEvent } from '@keel/core';
import { exceedsJsonDepth } from '@keel/core';
import type { AgentDefinition } from '@keel/events';
import { turnIdOf } from '@keel/events';
import { approvalFor } from '@keel/tooling';
import type { ApprovalVerdict } from '@keel/tooling';
import type { ConversationCommand, ToolCallVerdict } from '../conversation/conversation.commands.js';
import type { Conversation, CurrentTurn } from '../conversation/conversation.state.js';
import { guardToolCall } from '../guard/tool-guard.js';
import type { ModelStepOutput } from '../model/model-step.js';
import type { PricedUsage } from '../pricing/usage-pricing.js';
import type { ResolvedTool, ToolCatalog } from './tool-catalog.js';
import type { ChainPosition } from '../sub-agents/sub-agent-rules.js';
import { judgeSubAgentCall } from '../sub-agents/sub-agent-rules.js';

/*
 * The turn worker's decisions, apart from its IO: which step is due after an event, what the
 * guard says of each tool call the model asked for, and how a model answer becomes the command
 * that records it. Pure: ids come in as a function, the clock as a value.
 */

/** Deepest tool-call arguments a model may send (deeper ones are refused to the model). */
export const MAX_ARGS_DEPTH = 32;
/** Events after which a turn may need its next model step. */
const TRIGGERS = new Set(['TurnStarted', 'ToolCallCompleted']);

/** Whether an event may make a model step due (the others never do: no load needed). */
export const isStepTrigger = (event: RecordedEvent): boolean => TRIGGERS.has(event.type);

/** Why nothing is due after a trigger. */
export type NothingDueReason =
  'superseded' | 'not-current-turn' | 'waiting-for-tool-results' | 'max-steps-reached';

/** What the worker does after a trigger: run the turn's next model step, or nothing. */
export type DueStep =
  { kind: 'model-step'; turn: CurrentTurn; step: number } | { kind: 'none'; reason: NothingDueReason };

/**
 * The step due after `trigger`, given the conversation `state` and the events recorded `later`
 * (after the trigger, up to the state's version). Only the turn's last trigger acts: a later one
 * (another tool result) does, so a step is never started twice; a step after it is done already.
 * At max steps nothing is due here: the decider ends such a turn when it records the last step.
 * Tool calls not completed (running, or waiting for an approval) wait for their results.
 */
export const dueStep = (trigger: RecordedEvent, state: Conversation, later: RecordedEvent[]): DueStep => {
  const turnId = turnIdOf(trigger);
  const ofTurn = (e: RecordedEvent): boolean => turnIdOf(e) === turnId;
  if (later.some((e) => ofTurn(e) && (TRIGGERS.has(e.type) || e.type === 'AssistantMessageCompleted'))) {
    return { kind: 'none', reason: 'superseded' };
  }
  const turn = state.turn;
  if (!turn || turn.turnId !== turnId) return { kind: 'none', reason: 'not-current-turn' };
  if (turn.toolCalls.some((c) => c.state !== 'completed'))
    return { kind: 'none', reason: 'waiting-for-tool-results' };
  if (turn.step >= turn.agent.maxSteps) return { kind: 'none', reason: 'max-steps-reached' };
  return { kind: 'model-step', turn, step: turn.step + 1 };
};

/** A tool call as the model asked for it, with a Keel id and arguments safe to keep. */
export type KeptToolCall = ModelStepOutput['toolCalls'][number];

/**
 * The model's tool calls with Keel ids: providers' call ids are not unique (the demo model's
 * repeat, some providers have none); the ledger and Idempotency-Key need ids unique per tenant,
 * and the transcript then uses them on both sides (assistant tool_calls and tool results).
 * Arguments nested past MAX_ARGS_DEPTH would overflow every recursive reader (the validator, the
 * event log's JSON): such a call keeps a note instead, and the guard refuses it.
 */
export const keptToolCalls = (calls: ModelStepOutput['toolCalls'], newId: () => string): KeptToolCall[] =>
  calls.map((c) => ({
    ...c,
    ...(exceedsJsonDepth(c.args, MAX_ARGS_DEPTH)
      ? { args: `(arguments nested deeper than ${MAX_ARGS_DEPTH} levels, not kept)` }
      : {}),
    toolCallId: newId(),
  }));

/** What the guard judges a turn's tool calls against. */
export interface GuardContext {
  tools: ResolvedTool[];
  agent: Pick<AgentDefinition, 'tools' | 'phases'>;
  role: CurrentTurn['role'];
  phase: string | undefined;
  /** The turn's end user: tools by `userRoles`, approvals by `exceptUserRoles`. */
  user?: CurrentTurn['user'];
  validate: ToolCatalog['validate'];
  /** Where the conversation stands in a sub-agent call chain (sub-agent calls are checked along it). */
  position?: ChainPosition;
}

/** What the guard judges against in `state`: the agent's tools, the turn's role, the current phase. */
export const guardContext = (
  state: Conversation,
  turn: CurrentTurn,
  agent: AgentDefinition,
  tools: ResolvedTool[],
  validate: ToolCatalog['validate'],
): GuardContext => ({
  tools,
  // The resolved names: an MCP server's `<server>__*` stands for each of its tools.
  agent: { ...agent, tools: tools.map((t) => t.name) },
  role: turn.role,
  phase: state.phase ?? agent.phases?.initial,
  ...(turn.user ? { user: turn.user } : {}),
  validate,
  position: { conversationId: state.id, ...(state.parent ? { parent: state.parent } : {}), agent },
});

/** A verdict, and the error when the call could not be checked at all (refused, for the log). */
export interface JudgedCall {
  verdict: ToolCallVerdict;
  uncheckable?: unknown;
}

/** The guard's verdict on one call; never throws (a throw would redeliver a paid model step). */
export const judgeToolCall = (call: KeptToolCall, ctx: GuardContext): JudgedCall => {
  try {
    const tool = ctx.tools.find((t) => t.name === call.name);
    const argErrors =
      typeof call.args === 'string'
        ? [{ path: '', message: `arguments are not valid JSON: ${call.args.slice(0, 200)}` }]
        : tool
          ? ctx.validate(tool.inputSchema, call.args)
          : [];
    const { agent } = ctx;
    const approval = tool && approvalOf(tool, call.args, ctx.validate, ctx.user?.role);
    const verdict = guardToolCall({
      name: call.name,
      argErrors,
      tool: tool && { ...tool, approval: approval?.required ? 'always' : 'never' },
      agent: { tools: agent.tools, ...(agent.phases ? { phases: agent.phases } : {}) },
      role: ctx.role,
      phase: ctx.phase,
      ...(ctx.user ? { user: ctx.user } : {}),
    });
    if (verdict.kind !== 'allow' || !tool || !approval) return { verdict };
    const subAgent = ctx.position && judgeSubAgentCall(call.name, call.toolCallId, ctx.position);
    if (subAgent?.kind === 'refuse') return { verdict: subAgent };
    return {
      verdict: {
        ...verdict,
        // The policy's filled message goes with the approval it asks for.
        ...(approval.required && approval.message !== undefined ? { approvalMessage: approval.message } : {}),
        ...(!approval.required && approval.byPolicy ? { passedByPolicy: true } : {}),
        ...(tool.affects && tool.affects.length > 0 ? { affects: tool.affects } : {}),
        ...(tool.client ? { client: tool.client } : {}),
        ...(subAgent ? { childConversationId: subAgent.childConversationId } : {}),
      },
    };
  } catch (error) {
    const name = String(call.name).slice(0, 64);
    const message = `the call to "${name}" could not be checked; do the task without it.`;
    return { verdict: { kind: 'refuse', error: { code: 'invalid_tool_call', message } }, uncheckable: error };
  }
};

/** What the tool's approval policy says of this call's arguments. */
const approvalOf = (
  tool: ResolvedTool,
  args: unknown,
  validate: ToolCatalog['validate'],
  userRole: string | undefined,
): ApprovalVerdict =>
  approvalFor(tool.approval, args, (schema, value) => validate(schema, value).length === 0, userRole);

/** What a model answer is recorded with besides the answer itself. */
export interface RecordingInput {
  turnId: string;
  step: number;
  output: ModelStepOutput;
  calls: KeptToolCall[];
  verdicts: ToolCallVerdict[];
  priced: PricedUsage;
  at: string;
  newId: () => string;
}

/** The command that records a model answer (its text, judged tool calls and priced usage). */
export const recordModelOutput = (input: RecordingInput): ConversationCommand => {
  const { output, priced, calls, newId } = input;
  return {
    type: 'RecordModelOutput',
    turnId: input.turnId,
    step: input.step,
    messageId: newId(),
    text: output.text,
    toolCalls: calls.map((c, i) => ({ ...c, verdict: input.verdicts[i]! })),
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
    approvalIds: Object.fromEntries(calls.map((c) => [c.toolCallId, newId()])),
    at: input.at,
  };
};
