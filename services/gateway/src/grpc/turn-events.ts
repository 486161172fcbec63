import type { TurnEvent } from '@keel/proto/keel/conversations/v1/conversations';
import { Decision } from '@keel/proto/keel/conversations/v1/conversations';
import type { FeedFrame } from '../feed/feed-frames.js';

type Data = Record<string, unknown>;

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const json = (value: unknown): string => JSON.stringify(value ?? {});
const errorText = (error: unknown): string =>
  typeof error === 'string' ? error : str((error as Data).message) || JSON.stringify(error);

/** The payload of each frame name (API.md "The turn stream"), as keel.conversations.v1.TurnEvent sets it. */
const PAYLOADS: Readonly<Record<string, (d: Data) => Partial<TurnEvent>>> = {
  'turn.started': (d) => ({
    turnStarted: {
      turnId: str(d.turnId),
      ...(typeof d.intent === 'string' ? { intent: d.intent, confidence: num(d.confidence) } : {}),
      ...(typeof d.replaceFrom === 'string' ? { replaceFrom: d.replaceFrom } : {}),
    },
  }),
  'conversation.updated': (d) => ({
    conversationUpdated: {
      ...(typeof d.title === 'string' ? { title: d.title } : {}),
      ...(d.metadata !== undefined ? { metadataJson: JSON.stringify(d.metadata) } : {}),
    },
  }),
  data: (d) => ({ hookData: { hook: str(d.hook), dataJson: json(d.data) } }),
  'message.delta': (d) => ({ messageDelta: { turnId: str(d.turnId), text: str(d.text) } }),
  'tool.call': (d) => ({
    toolCall: {
      turnId: str(d.turnId),
      toolCallId: str(d.toolCallId),
      name: str(d.name),
      argsJson: json(d.args),
      // A client call (API.md "Client tools"): who runs it and, once it may run, by when.
      ...(typeof d.executor === 'string' ? { executor: d.executor } : {}),
      ...(typeof d.deadline === 'string' ? { deadline: d.deadline } : {}),
      // A sub-agent call (API.md "Sub-agents"): the child conversation it runs.
      ...(typeof d.childConversationId === 'string' ? { childConversationId: d.childConversationId } : {}),
    },
  }),
  'approval.required': (d) => ({
    approvalRequired: {
      turnId: str(d.turnId),
      approvalId: str(d.approvalId),
      toolCallId: str(d.toolCallId),
      name: str(d.name),
      argsJson: json(d.args),
      // A child's approval in its parent's stream: the conversation to decide it in.
      ...(typeof d.conversationId === 'string' ? { conversationId: d.conversationId } : {}),
    },
  }),
  'approval.decided': (d) => ({
    approvalDecided: {
      approvalId: str(d.approvalId),
      decision:
        d.decision === 'approve'
          ? Decision.APPROVE
          : d.decision === 'deny'
            ? Decision.DENY
            : Decision.UNSPECIFIED,
      by: str(d.by),
      ...(typeof d.toolCallId === 'string' ? { toolCallId: d.toolCallId } : {}),
      ...(typeof d.deadline === 'string' ? { deadline: d.deadline } : {}),
    },
  }),
  'tool.result': (d) => ({
    toolResult: {
      turnId: str(d.turnId),
      toolCallId: str(d.toolCallId),
      name: str(d.name),
      ok: d.ok === true,
      ...(d.result !== undefined ? { resultJson: JSON.stringify(d.result) } : {}),
      // The proto's `error` is the text the model sees: the SSE error object's message.
      ...(d.error !== undefined && d.error !== null ? { error: errorText(d.error) } : {}),
    },
  }),
  'message.completed': (d) => ({
    messageCompleted: { turnId: str(d.turnId), messageId: str(d.messageId), text: str(d.text) },
  }),
  usage: (d) => ({
    usage: {
      turnId: str(d.turnId),
      model: str(d.model),
      promptTokens: num(d.promptTokens),
      completionTokens: num(d.completionTokens),
      cacheReadTokens: num(d.cacheReadTokens),
      ...(typeof d.costUsd === 'number' ? { costUsd: d.costUsd } : {}),
    },
  }),
  context: (d) => ({
    context: {
      turnId: str(d.turnId),
      contextTokens: num(d.contextTokens),
      windowTokens: num(d.windowTokens),
    },
  }),
  'turn.completed': (d) => ({
    turnCompleted: {
      turnId: str(d.turnId),
      finishReason: str(d.finishReason),
      affected: Array.isArray(d.affected) ? d.affected.map(String) : [],
    },
  }),
  'turn.failed': (d) => {
    const error = (typeof d.error === 'object' && d.error !== null ? d.error : {}) as Data;
    return {
      turnFailed: { turnId: str(d.turnId), error: { code: str(error.code), message: str(error.message) } },
    };
  },
  'turn.cancelled': (d) => ({ turnCancelled: { turnId: str(d.turnId) } }),
};

/**
 * The TurnEvent of a turn-stream frame: the same id and event name as the SSE frame, the data as
 * the typed payload (JSON values of `args` / `result` as JSON text). Undefined for a name API.md
 * does not list (never sent).
 */
export const turnEventOf = (frame: FeedFrame): TurnEvent | undefined => {
  if (!Object.hasOwn(PAYLOADS, frame.event)) return undefined;
  const data = (typeof frame.data === 'object' && frame.data !== null ? frame.data : {}) as Data;
  return { id: frame.id, event: frame.event, ...PAYLOADS[frame.event]!(data) };
};
