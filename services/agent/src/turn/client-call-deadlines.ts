import type { Consumer, Delivery, EventBus, RecordedEvent } from '@keel/core';
import { parseStreamName } from '@keel/core';
import { CONVERSATION_CATEGORY } from '@keel/events';
import type { KeelLogger } from '@keel/runtime';
import type { CallContext } from '../call-context.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import { pendingClientCalls } from '../conversation/conversation.state.js';
import { DeadlineAlarm } from '../deadlines/deadline-alarm.js';
import type { Deadline, Deadlines } from '../deadlines/deadlines.js';

/** What an event means for client call deadlines: one to set, one to clear, or nothing. */
export type ClientDeadlineChange =
  { kind: 'set'; deadline: Deadline } | { kind: 'clear'; tenantId: string; id: string } | undefined;

/** The deadline id of a client call: `<conversationId>/<toolCallId>`. */
export const clientDeadlineId = (conversationId: string, toolCallId: string): string =>
  `${conversationId}/${toolCallId}`;

const fields = (event: RecordedEvent): Record<string, unknown> =>
  typeof event.data === 'object' && event.data !== null ? (event.data as Record<string, unknown>) : {};

/**
 * The policy half (pure): a client call's deadline starts with its ToolCallRequested (no approval
 * needed) or the ApprovalDecided that approves it, both carrying `deadline`; any result of the
 * call (the client's answer, its timeout, a cancel or failure closing it) ends it.
 */
export const clientDeadlineChange = (event: RecordedEvent): ClientDeadlineChange => {
  const data = fields(event);
  const { toolCallId, deadline } = data;
  if (typeof toolCallId !== 'string') return undefined;
  const id = clientDeadlineId(parseStreamName(event.streamName).id, toolCallId);
  const { tenantId } = event;
  const starts =
    (event.type === 'ToolCallRequested' && data.executor === 'client') ||
    (event.type === 'ApprovalDecided' && data.decision === 'approve');
  if (starts && typeof deadline === 'string')
    return { kind: 'set', deadline: { tenantId, id, dueAt: deadline } };
  if (event.type === 'ToolCallCompleted') return { kind: 'clear', tenantId, id };
  return undefined;
};

/** What the deadlines of client calls work with. */
export interface ClientCallDeadlinesDeps {
  bus: EventBus;
  conversations: ConversationService;
  deadlines: Deadlines;
  logger: KeelLogger;
  /** How often every instance reads the stored deadlines again (default 5 s). */
  pollMs?: number;
}

/**
 * The IO half: keeps client calls' deadlines in a durable store (DeadlineAlarm) from the
 * conversation events, and at a deadline asks the conversation to expire the call. The decider
 * lets only the first of the client's answer and the timeout through, so an alarm that fires on
 * two instances, or again after a restart, times the call out once.
 */
export class ClientCallDeadlines {
  private consumer: Consumer | undefined;
  private readonly alarm: DeadlineAlarm;

  constructor(private readonly deps: ClientCallDeadlinesDeps) {
    this.alarm = new DeadlineAlarm({
      deadlines: deps.deadlines,
      onDue: (deadline) => this.expire(deadline),
      onError: (deadline, error) =>
        deps.logger.warn(
          { tenantId: deadline.tenantId, call: deadline.id, err: error },
          'client call expiry failed',
        ),
      ...(deps.pollMs === undefined ? {} : { pollMs: deps.pollMs }),
    });
  }

  async start(): Promise<void> {
    await this.alarm.start();
    this.consumer = await this.deps.bus.consume(
      {
        name: 'agent-client-deadlines',
        filter: { category: CONVERSATION_CATEGORY },
        idempotency: 'none',
        // One insert or delete per event: a delivery a killed instance held comes back soon.
        ackWaitMs: 5_000,
      },
      (delivery) => this.onEvent(delivery),
    );
  }

  async stop(): Promise<void> {
    this.alarm.stop();
    await this.consumer?.stop();
    this.consumer = undefined;
  }

  private async onEvent({ event }: Delivery): Promise<void> {
    const change = clientDeadlineChange(event);
    if (change?.kind === 'set') await this.alarm.set(change.deadline);
    if (change?.kind === 'clear') await this.alarm.clear(change.tenantId, change.id);
  }

  /** Times the call out (once: the decider drops a repeat), then forgets its deadline if it is settled. */
  private async expire({ tenantId, id }: Deadline): Promise<void> {
    const [conversationId = '', toolCallId = ''] = id.split('/');
    const ctx: CallContext = {
      tenantId,
      keyId: 'system:agent',
      role: 'admin',
      userId: 'system:agent',
      correlationId: `client-deadline:${toolCallId}`,
    };
    const { state } = await this.deps.conversations.run(ctx, conversationId, {
      type: 'ExpireClientCall',
      toolCallId,
      at: new Date().toISOString(),
    });
    if (!pendingClientCalls(state).some((c) => c.toolCallId === toolCallId)) {
      await this.alarm.clear(tenantId, id);
    }
  }
}
