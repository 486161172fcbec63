// keel.conversations.v1 messages (the generated types: enums as numbers, JSON as text) as API.md's
// JSON shows them.
import type {
  Conversation,
  ConversationSummary,
  ListConversationsResponse,
} from '@keel/proto/keel/conversations/v1/conversations';
import { ConversationStatus, Decision, MessageRole } from '@keel/proto/keel/conversations/v1/conversations';

/** One conversation of `GET /v1/conversations`. */
export interface ConversationListItem {
  id: string;
  agentId: string;
  title?: string;
  metadata?: Record<string, string>;
  /** The acting user who created it. */
  userId?: string;
  status?: string;
  createdAt: string;
}

/** `GET /v1/conversations/{id}`'s body (API.md). */
export interface ConversationView {
  id: string;
  agentId: string;
  status: string;
  version: number;
  createdAt: string;
  /** Given at creation; absent when none was. */
  title?: string;
  /** Given at creation or by PATCH; absent when none. */
  metadata?: Record<string, string>;
  /** The acting user who created it; absent when not recorded. */
  userId?: string;
  /** The agent phase it is in, when its agent has phases. */
  phase?: string;
  messages: Array<{
    id: string;
    role: string;
    content: string;
    toolCalls?: Array<{ id: string; name: string; args: unknown }>;
    toolCallId?: string;
    /** The latest rating given to the message. */
    feedback?: { rating: string; comment?: string };
    /** The per-message context a user message was sent with. */
    context?: unknown;
  }>;
  pendingApprovals: Array<{
    approvalId: string;
    toolCallId: string;
    tool: string;
    args: unknown;
    requestedAt: string;
  }>;
  /** Client tool calls the client is to answer (API.md "Client tools"), in the order asked. */
  pendingClientCalls: Array<{ toolCallId: string; tool: string; args: unknown; deadline: string }>;
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
  /** The prompt fill of the last model call in tokens; 0 before any. */
  contextTokens: number;
  /** The working memory, latest first, at most 50. */
  entities: Array<{ type: string; id: string; label?: string }>;
  /** A sub-agent's child conversation: the conversation whose tool call runs it. */
  parentConversationId?: string;
}

/**
 * An enum value as the API's lowercase word, from the generated enum's names
 * (`ConversationStatus.AWAITING_APPROVAL` → `awaiting_approval`, `MessageRole.USER` → `user`).
 */
const wordOf = (names: Record<number, string>, value: number): string =>
  (names[value] ?? 'UNRECOGNIZED').toLowerCase();

/** The conversation status as the API's word (`active`, `awaiting_approval`, …). */
export const statusWord = (status: ConversationStatus): string => wordOf(ConversationStatus, status);

/** The approval decision as the API's word (`approve`, `deny`). */
export const decisionWord = (decision: Decision): string => wordOf(Decision, decision);

/** JSON text as the value it holds; text that is not JSON stays a string. */
const json = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** The conversation summary as `POST /v1/conversations` answers it. */
export const summaryView = (summary: ConversationSummary) => ({
  id: summary.id,
  agentId: summary.agentId,
  status: statusWord(summary.status),
  createdAt: summary.createdAt,
});

/** `GET /v1/conversations`'s body: a page, newest first; `nextCursor` null on the last page. */
export const conversationListView = (
  list: ListConversationsResponse,
): { data: ConversationListItem[]; nextCursor: string | null } => ({
  data: (list.data ?? []).map((summary) => ({
    id: summary.id,
    agentId: summary.agentId,
    ...(summary.title ? { title: summary.title } : {}),
    ...(summary.metadata && Object.keys(summary.metadata).length > 0
      ? { metadata: { ...summary.metadata } }
      : {}),
    ...(summary.userId ? { userId: summary.userId } : {}),
    ...(summary.status !== ConversationStatus.UNSPECIFIED ? { status: statusWord(summary.status) } : {}),
    createdAt: summary.createdAt,
  })),
  nextCursor: list.nextCursor ? list.nextCursor : null,
});

/** What the conversation waits for: people's approvals and the client's answers (args as JSON). */
const pendingView = (
  conversation: Conversation,
): Pick<ConversationView, 'pendingApprovals' | 'pendingClientCalls'> => ({
  pendingApprovals: (conversation.pendingApprovals ?? []).map((approval) => ({
    approvalId: approval.approvalId,
    toolCallId: approval.toolCallId,
    tool: approval.tool,
    args: json(approval.argsJson),
    requestedAt: approval.requestedAt,
  })),
  pendingClientCalls: (conversation.pendingClientCalls ?? []).map((call) => ({
    toolCallId: call.toolCallId,
    tool: call.tool,
    args: json(call.argsJson),
    deadline: call.deadline,
  })),
});

/** A message's latest rating as GET shows it; nothing when it has none. */
const feedbackView = (
  feedback: { rating: string; comment?: string } | undefined,
): { feedback?: { rating: string; comment?: string } } =>
  feedback
    ? { feedback: { rating: feedback.rating, ...(feedback.comment ? { comment: feedback.comment } : {}) } }
    : {};

/** The conversation state with statuses and roles as the API's lowercase words and args as JSON. */
export const conversationView = (conversation: Conversation): ConversationView => ({
  id: conversation.id,
  agentId: conversation.agentId,
  status: statusWord(conversation.status),
  version: Number(conversation.version),
  createdAt: conversation.createdAt,
  ...(conversation.title ? { title: conversation.title } : {}),
  ...(conversation.metadata && Object.keys(conversation.metadata).length > 0
    ? { metadata: { ...conversation.metadata } }
    : {}),
  ...(conversation.userId ? { userId: conversation.userId } : {}),
  ...(conversation.phase === undefined ? {} : { phase: conversation.phase }),
  messages: (conversation.messages ?? []).map((message) => ({
    id: message.id,
    role: wordOf(MessageRole, message.role),
    content: message.content,
    ...(message.toolCalls && message.toolCalls.length > 0
      ? {
          toolCalls: message.toolCalls.map((call) => ({
            id: call.id,
            name: call.name,
            args: json(call.argsJson),
          })),
        }
      : {}),
    ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
    ...(message.contextJson ? { context: json(message.contextJson) } : {}),
    ...feedbackView(message.feedback),
  })),
  ...pendingView(conversation),
  usage: {
    promptTokens: Number(conversation.usage?.promptTokens ?? 0),
    completionTokens: Number(conversation.usage?.completionTokens ?? 0),
    costUsd: Number(conversation.usage?.costUsd ?? 0),
  },
  contextTokens: Number(conversation.contextTokens ?? 0),
  entities: (conversation.entities ?? []).map((e) => ({
    type: e.type,
    id: e.id,
    ...(e.label === undefined ? {} : { label: e.label }),
  })),
  ...(conversation.parentConversationId ? { parentConversationId: conversation.parentConversationId } : {}),
});
