// The shapes of the public API the console reads (../shared/API.md), only the fields it shows.

export type Role = 'operator' | 'admin' | 'editor' | 'viewer';

export interface Me {
  keyId: string;
  role: Role;
  tenant: { id: string; name: string } | null;
}

export interface Tenant {
  id: string;
  name: string;
  createdAt: string;
  monthlyUsd?: number | null;
  costMonthUsd?: number;
}

export interface KeyInfo {
  id: string;
  role: Role;
  name?: string | null;
  createdAt?: string;
  lastUsedAt?: string | null;
}

export interface IssuedKey {
  id: string;
  role: Role;
  key: string;
}

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

export interface ConversationSummary {
  id: string;
  agentId: string;
  title?: string | null;
  status: string;
  createdAt?: string;
}

export interface Message {
  id: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: Array<{ id?: string; name: string; args: unknown }>;
  toolCallId?: string;
}

export interface PendingApproval {
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  message?: string;
  requestedAt: string;
}

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

export interface TenantApproval extends PendingApproval {
  tenantId: string;
  conversationId: string;
}

export interface DeadLetter {
  id: string;
  consumer: string;
  tenantId?: string | null;
  eventType: string;
  error: string;
  attempts: number;
  failedAt: string;
}

export type GroupBy = 'day' | 'model' | 'user' | 'agent' | 'tenant';

export interface UsageRow {
  key: string;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  turns: number;
}

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
