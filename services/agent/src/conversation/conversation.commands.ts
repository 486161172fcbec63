import type {
  AcceptedRequest,
  ActorRole,
  AgentSnapshot,
  ChildApprovalRequested,
  EndUser,
  EventError,
  FeedbackRating,
  ModelUsage,
  ParentLink,
  TurnIntent,
} from '@keel/events';

/** What to do with a message that arrives while a turn runs (API `ifBusy`). */
export type IfBusy = 'reject' | 'enqueue' | 'interrupt';

/** The guard's verdict on one tool call the model asked for (computed before `decide`, purely). */
export type ToolCallVerdict =
  | {
      kind: 'allow';
      approval: 'never' | 'always';
      approvalMessage?: string;
      /** True when the tool's `when` was evaluated and let the call run without a person. */
      passedByPolicy?: boolean;
      /** The resources the tool declares it changes (its `affects`). */
      affects?: string[];
      /** A client tool: the connected client runs the call within `timeoutMs` (API "Client tools"). */
      client?: { timeoutMs: number };
      /** A sub-agent call's child conversation (the agent service runs it, not the tools service). */
      childConversationId?: string;
    }
  | { kind: 'refuse'; error: EventError };

/** Commands of the conversation aggregate. `at` is the time the caller observed (deciders read no clock). */
export type ConversationCommand =
  | {
      type: 'CreateConversation';
      conversationId: string;
      agentId: string;
      title?: string;
      metadata?: Record<string, string>;
      /** The acting user who creates it. */
      userId?: string;
      /** A sub-agent call's child: the parent's call and chain. */
      parent?: ParentLink;
      /** Agents offered as sub-agents besides the agent's own (a hierarchical run's manager: the members). */
      delegates?: string[];
      /** The client request (Idempotency-Key) it came from: a retry of it gets the first answer. */
      request?: AcceptedRequest;
      at: string;
    }
  | {
      type: 'SubmitMessage';
      turnId: string;
      messageId: string;
      content: string;
      ifBusy: IfBusy;
      agent: AgentSnapshot;
      role: ActorRole;
      by: string;
      /** What the agent's intents classified `content` as (computed before `decide`), if any. */
      classified?: TurnIntent;
      /** Edit/regenerate: the user message of the branch this one replaces (and all after it). */
      replaceFrom?: string;
      /** What the user's screen shows (API `context`), checked against the agent's contextSchema. */
      context?: Record<string, unknown>;
      /** The end user the turn runs for (`X-Keel-User`, `X-Keel-User-Role`). */
      user?: EndUser;
      /** The client request (Idempotency-Key) it came from: a retry of it gets the first turn. */
      request?: AcceptedRequest;
      at: string;
    }
  | {
      type: 'RecordModelOutput';
      turnId: string;
      /** The step this output is for (the turn's steps so far + 1): a second output for a step is refused. */
      step: number;
      messageId: string;
      text: string;
      toolCalls: Array<{ toolCallId: string; name: string; args: unknown; verdict: ToolCallVerdict }>;
      usage: ModelUsage;
      /** Approval ids for the calls that need one, by tool call id (ids come from outside: deciders are pure). */
      approvalIds: Record<string, string>;
      at: string;
    }
  | {
      type: 'DecideApproval';
      approvalId: string;
      decision: 'approve' | 'deny';
      by: string;
      reason?: string;
      /** The client request (Idempotency-Key) it came from: a retry of it gets the first answer. */
      request?: AcceptedRequest;
      at: string;
    }
  | {
      type: 'RecordToolResult';
      toolCallId: string;
      ok: boolean;
      result?: unknown;
      error?: EventError;
      at: string;
    }
  | {
      /** The client's answer to a client tool call (API `POST …/tool-results/{toolCallId}`). */
      type: 'SubmitToolResult';
      toolCallId: string;
      ok: boolean;
      result?: unknown;
      error?: EventError;
      by: string;
      at: string;
    }
  | {
      /** A client call's deadline came (the deadline alarm): it times out unless answered. */
      type: 'ExpireClientCall';
      toolCallId: string;
      at: string;
    }
  | {
      /** A descendant's approval.required, shown in this (the parent's) stream while the call is open. */
      type: 'RecordChildApproval';
      approval: Omit<ChildApprovalRequested['data'], 'turnId'>;
    }
  | { type: 'FailTurn'; turnId: string; error: EventError; at: string }
  | {
      type: 'CancelTurn';
      by: string;
      /** The client request (Idempotency-Key) it came from: a retry of it cancels nothing more. */
      request?: AcceptedRequest;
      at: string;
    }
  | {
      type: 'UpdateConversation';
      title?: string;
      /** Replaces the whole map; `{}` clears it. */
      metadata?: Record<string, string>;
      by: string;
      at: string;
    }
  | {
      type: 'GiveFeedback';
      messageId: string;
      rating: FeedbackRating;
      comment?: string;
      by: string;
      at: string;
    }
  | {
      type: 'RecordAutoTitle';
      /** The turn after which the title call ran. */
      turnId: string;
      title: string;
      usage: ModelUsage;
      at: string;
    };
