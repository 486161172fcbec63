// keel.conversations.v1 messages (enums by name, JSON as text) as API.md's JSON shows them.

/** The proto Conversation as proto-loader hands it over (enums as their names). */
export interface ConversationMessage {
  id: string;
  agentId: string;
  title?: string;
  status: string;
  version: number;
  createdAt: string;
  metadata?: Record<string, string>;
  messages?: Array<{
    id: string;
    role: string;
    content: string;
    toolCalls?: Array<{ id: string; name: string; argsJson: string }>;
    toolCallId?: string | null;
  }>;
  pendingApprovals?: Array<{
    approvalId: string;
    toolCallId: string;
    tool: string;
    argsJson: string;
    requestedAt: string;
  }>;
  usage?: { promptTokens: number; completionTokens: number; costUsd: number } | null;
}

/** The proto ConversationSummary. */
export interface ConversationSummaryMessage {
  id: string;
  agentId: string;
  title?: string;
  status: string;
  createdAt: string;
}

/** The proto ListConversationsResponse. */
export interface ConversationListMessage {
  data?: ConversationSummaryMessage[];
  nextCursor?: string;
}

/** One conversation of `GET /v1/conversations`. */
export interface ConversationListItem {
  id: string;
  agentId: string;
  title?: string;
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
  /** Given at creation; absent when none was. */
  metadata?: Record<string, string>;
  messages: Array<{
    id: string;
    role: string;
    content: string;
    toolCalls?: Array<{ id: string; name: string; args: unknown }>;
    toolCallId?: string;
  }>;
  pendingApprovals: Array<{
    approvalId: string;
    toolCallId: string;
    tool: string;
    args: unknown;
    requestedAt: string;
  }>;
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
}

/** `CONVERSATION_STATUS_AWAITING_APPROVAL` → `awaiting_approval`, `MESSAGE_ROLE_USER` → `user`. */
export const wordOf = (name: string, prefix: string): string =>
  (name.startsWith(prefix) ? name.slice(prefix.length) : name).toLowerCase();

/** JSON text as the value it holds; text that is not JSON stays a string. */
const json = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** The conversation summary as `POST /v1/conversations` answers it. */
export const summaryView = (summary: ConversationSummaryMessage) => ({
  id: summary.id,
  agentId: summary.agentId,
  status: wordOf(summary.status, 'CONVERSATION_STATUS_'),
  createdAt: summary.createdAt,
});

/** `GET /v1/conversations`'s body: a page, newest first; `nextCursor` null on the last page. */
export const conversationListView = (
  list: ConversationListMessage,
): { data: ConversationListItem[]; nextCursor: string | null } => ({
  data: (list.data ?? []).map((summary) => ({
    id: summary.id,
    agentId: summary.agentId,
    ...(summary.title ? { title: summary.title } : {}),
    ...(summary.status && summary.status !== 'CONVERSATION_STATUS_UNSPECIFIED'
      ? { status: wordOf(summary.status, 'CONVERSATION_STATUS_') }
      : {}),
    createdAt: summary.createdAt,
  })),
  nextCursor: list.nextCursor ? list.nextCursor : null,
});

/** The conversation state with statuses and roles as the API's lowercase words and args as JSON. */
export const conversationView = (conversation: ConversationMessage): ConversationView => ({
  id: conversation.id,
  agentId: conversation.agentId,
  status: wordOf(conversation.status, 'CONVERSATION_STATUS_'),
  version: Number(conversation.version),
  createdAt: conversation.createdAt,
  ...(conversation.title ? { title: conversation.title } : {}),
  ...(conversation.metadata && Object.keys(conversation.metadata).length > 0
    ? { metadata: { ...conversation.metadata } }
    : {}),
  messages: (conversation.messages ?? []).map((message) => ({
    id: message.id,
    role: wordOf(message.role, 'MESSAGE_ROLE_'),
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
  })),
  pendingApprovals: (conversation.pendingApprovals ?? []).map((approval) => ({
    approvalId: approval.approvalId,
    toolCallId: approval.toolCallId,
    tool: approval.tool,
    args: json(approval.argsJson),
    requestedAt: approval.requestedAt,
  })),
  usage: {
    promptTokens: Number(conversation.usage?.promptTokens ?? 0),
    completionTokens: Number(conversation.usage?.completionTokens ?? 0),
    costUsd: Number(conversation.usage?.costUsd ?? 0),
  },
});
