// A conversation's timeline, rebuilt from the log: GET /v1/conversations/{id} for its state and
// user messages, its events feed (from the start, then live) for each step: tool calls with their
// arguments and results, approvals (decided here with "Approve" / "Deny"), usage per model call,
// errors. User messages are placed at the turn they started.
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState } from 'react';
import { Link } from 'wouter';
import { useFeed } from '../api/feed';
import { actingTenant, useSession } from '../api/session';
import type { Conversation as ConversationBody, FeedEvent, Message } from '../api/types';
import { ApprovalButtons } from '../components/approval-buttons';
import { formatCount, formatJson, formatUsd } from '../components/format';
import { PageTitle } from '../components/layout';
import { ErrorNote, Loading, StatusBadge } from '../components/status';
import { NeedsTenant } from '../components/tenant-picker';

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const num = (value: unknown): number => (typeof value === 'number' ? value : 0);

const Step = ({ kind, title, children }: { kind: string; title: string; children?: React.ReactNode }) => (
  <li className={`step step-${kind}`}>
    <span className="step-title">{title}</span>
    {children}
  </li>
);

const Json = ({ value }: { value: unknown }) => <pre className="json">{formatJson(value)}</pre>;

/** One durable event as a step of the timeline (undefined: nothing to show). */
const EventStep = ({
  event,
  conversation,
  tenantId,
}: {
  event: FeedEvent;
  conversation: ConversationBody;
  tenantId: string | undefined;
}) => {
  const d = event.data;
  switch (event.event) {
    case 'turn.started':
      return <li className="turn-divider">Turn {str(d.turnId)} started</li>;
    case 'message.completed':
      return str(d.text) === '' ? null : (
        <Step kind="assistant" title="Assistant">
          <p className="bubble">{str(d.text)}</p>
        </Step>
      );
    case 'tool.call':
      return (
        <Step kind="tool" title={`Tool call: ${str(d.name)}`}>
          <Json value={d.args} />
        </Step>
      );
    case 'approval.required': {
      const pending = conversation.pendingApprovals.some((a) => a.approvalId === str(d.approvalId));
      return (
        <Step kind="approval" title={`Approval needed: ${str(d.name)}`}>
          {typeof d.message === 'string' && <p>{d.message}</p>}
          <Json value={d.args} />
          {pending && (
            <ApprovalButtons
              conversationId={conversation.id}
              approvalId={str(d.approvalId)}
              tenantId={tenantId}
            />
          )}
        </Step>
      );
    }
    case 'approval.decided':
      return (
        <Step
          kind={d.decision === 'approve' ? 'approved' : 'denied'}
          title={`${d.decision === 'approve' ? 'Approved' : 'Denied'} by ${str(d.by) || 'someone'}`}
        />
      );
    case 'tool.result':
      return (
        <Step kind={d.ok ? 'result' : 'error'} title={`Result of ${str(d.name)}${d.ok ? '' : ' (error)'}`}>
          <Json value={d.ok ? d.result : d.error} />
        </Step>
      );
    case 'usage':
      return (
        <li className="usage-line">
          {str(d.model)} · {formatCount(num(d.promptTokens))} prompt + {formatCount(num(d.completionTokens))}{' '}
          completion tokens · {formatUsd(num(d.costUsd))}
        </li>
      );
    case 'turn.completed':
      return <Step kind="completed" title={`Turn completed (${str(d.finishReason) || 'done'})`} />;
    case 'turn.failed': {
      const error = (d.error ?? {}) as { code?: string; message?: string };
      return (
        <Step kind="error" title={`Turn failed: ${error.code ?? 'error'}`}>
          <p>{error.message}</p>
        </Step>
      );
    }
    case 'turn.cancelled':
      return <Step kind="error" title="Turn cancelled" />;
    default:
      return null;
  }
};

const UserStep = ({ message }: { message: Message }) => (
  <Step kind="user" title="User">
    <p className="bubble">{message.content}</p>
  </Step>
);

/** A conversation belongs to one tenant: the operator names it (X-Keel-Tenant) before it loads. */
export const Conversation = ({ id }: { id: string }) => {
  const session = useSession();
  if (session.tenantId === undefined) {
    return (
      <>
        <PageTitle title="Conversation" />
        <NeedsTenant what="conversation" />
      </>
    );
  }
  return <TenantConversation key={session.tenantId} id={id} />;
};

const TenantConversation = ({ id }: { id: string }) => {
  const session = useSession();
  const queryClient = useQueryClient();
  const tenant = actingTenant(session);
  const [events, setEvents] = useState<FeedEvent[]>([]);
  const conversation = useQuery({
    queryKey: ['conversation', session.key, session.tenantId, id],
    queryFn: () => session.call<ConversationBody>(`/v1/conversations/${encodeURIComponent(id)}`, { tenant }),
  });
  const onEvent = useCallback(
    (event: FeedEvent) => {
      if (event.event === 'message.delta' || event.event === 'context') return;
      setEvents((current) => (current.some((e) => e.id === event.id) ? current : [...current, event]));
      void queryClient.invalidateQueries({ queryKey: ['conversation'] });
    },
    [queryClient],
  );
  const feed = useFeed(session, `/v1/conversations/${encodeURIComponent(id)}/events`, tenant, onEvent);

  if (conversation.isPending) return <Loading what="the conversation" />;
  if (conversation.isError) {
    return (
      <>
        <PageTitle title="Conversation" />
        <ErrorNote error={conversation.error} />
        <Link href="/conversations">Back to conversations</Link>
      </>
    );
  }
  const state = conversation.data;
  const userMessages = state.messages.filter((message) => message.role === 'user');
  let turns = 0;
  return (
    <>
      <PageTitle title={state.title || 'Conversation'}>
        <StatusBadge status={state.status} />
      </PageTitle>
      <p className="muted">
        <Link href="/conversations">Conversations</Link> / {state.id} · agent {state.agentId} ·{' '}
        {formatCount(state.usage.promptTokens + state.usage.completionTokens)} tokens ·{' '}
        {formatUsd(state.usage.costUsd)}
      </p>
      {feed.state === 'error' && <ErrorNote error={feed.message} prefix="The events feed" />}
      <ol className="timeline" aria-label="Timeline">
        {events.map((event) => {
          const user = event.event === 'turn.started' ? userMessages[turns++] : undefined;
          return (
            <FragmentOf key={event.id}>
              <EventStep event={event} conversation={state} tenantId={session.tenantId} />
              {user && <UserStep message={user} />}
            </FragmentOf>
          );
        })}
        {userMessages.slice(turns).map((message) => (
          <UserStep key={message.id} message={message} />
        ))}
      </ol>
      {events.length === 0 && feed.state === 'connecting' && <Loading what="the timeline" />}
      {events.length === 0 && feed.state === 'live' && <p className="muted">No turns yet.</p>}
    </>
  );
};

const FragmentOf = ({ children }: { children: React.ReactNode }) => <>{children}</>;
