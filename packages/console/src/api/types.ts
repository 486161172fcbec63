// The shapes of the public API the console reads (../shared/API.md), only the fields it shows.

/** Who a key is (GET /v1/me). */
export type Role = 'operator' | 'admin' | 'editor' | 'viewer';

/** GET /v1/me: the signed-in key, its role and tenant (none for the operator). */
export interface Me {
  keyId: string;
  role: Role;
  tenant: { id: string; name: string } | null;
}

/** A row of GET /v1/tenants: the budget and the cost this month (UTC). */
export interface Tenant {
  id: string;
  name: string;
  createdAt: string;
  monthlyUsd?: number | null;
  costMonthUsd?: number;
}

/** A key as listed (never the key itself). */
export interface KeyInfo {
  id: string;
  role: Role;
  name?: string | null;
  createdAt?: string;
  lastUsedAt?: string | null;
}

/** A key just issued: the only answer that carries the key. */
export interface IssuedKey {
  id: string;
  role: Role;
  key: string;
}

/** GET /v1/operator/overview: the platform's counters. */
export interface Overview {
  tenants: number;
  turnsRunning: number;
  approvalsPending: number;
  clientCallsPending: number;
  deadLetters: number;
  costTodayUsd: number;
  costMonthUsd: number;
  tokensToday: number;
}

/** A row of GET /v1/conversations. */
export interface ConversationSummary {
  id: string;
  agentId: string;
  title?: string | null;
  status: string;
  createdAt?: string;
}

/** A message of a conversation as GET /v1/conversations/{id} rebuilds it. */
export interface Message {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: Array<{ id?: string; name: string; args: unknown }>;
  toolCallId?: string;
}

/** An approval a conversation waits for. */
export interface PendingApproval {
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  message?: string;
  requestedAt: string;
}

/** GET /v1/conversations/{id}: the state rebuilt from the log. */
export interface Conversation {
  id: string;
  agentId: string;
  title?: string | null;
  status: string;
  version: number;
  messages: Message[];
  pendingApprovals: PendingApproval[];
  usage: { promptTokens: number; completionTokens: number; costUsd: number };
}

/** A row of GET /v1/approvals?status=pending: with its tenant and conversation. */
export interface TenantApproval extends PendingApproval {
  tenantId: string;
  conversationId: string;
}

/** A row of GET /v1/turns?status=running: a turn started and not yet ended. */
export interface RunningTurn {
  tenantId: string;
  conversationId: string;
  turnId: string;
  agentId: string;
  startedAt: string;
}

/** A team run as GET /v1/runs lists it (newest first). */
export interface RunSummary {
  id: string;
  teamId: string;
  status: string;
  input: string;
  output: string | null;
  error?: { code: string; message: string };
  tasks: Array<{ id: string; agentId: string; role: string; status: string; conversationId: string }>;
  usage: { costUsd: number };
  createdAt: string;
}

/** A row of GET /v1/dead-letters (never the event's payload). */
export interface DeadLetter {
  id: string;
  consumer: string;
  tenantId?: string | null;
  eventType: string;
  error: string;
  attempts: number;
  failedAt: string;
}

/** What usage rows are keyed by (`tenant`: the operator across tenants). */
export type GroupBy = 'day' | 'model' | 'user' | 'agent' | 'tenant';

/** The figures of one usage row (and of the totals). */
export interface UsageRow {
  key: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  turns: number;
}

/** GET /v1/usage as JSON. */
export interface UsageReport {
  totals: Partial<UsageRow>;
  rows: UsageRow[];
}

/** One frame of an SSE feed: its id, event name and parsed data. */
export interface FeedEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}
