import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import {
  conversationStatusFromJSON,
  decisionFromJSON,
} from '@keel/proto/keel/conversations/v1/conversations';
import { AgentClient, answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { REQUEST_ID_HEADER } from '../http/request-id.js';
import { EventsFeedService } from '../feed/events-feed.service.js';
import { resumeAfter } from '../feed/feed-frames.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAY_HEADER,
  idempotencyKeyOf,
} from '../idempotency/idempotency-key.js';
import { ForwardsIdempotencyKey, OwnIdempotency } from '../idempotency/idempotency.interceptor.js';
import { admissionOf, AwaitsRateLimit } from '../rate-limit/rate-limit.guard.js';
import type { PreparedTurnFeed, SubmittedOnce } from '../feed/turn-feed.service.js';
import { TurnFeedService } from '../feed/turn-feed.service.js';
import {
  parseCreateConversation,
  parseDecideApproval,
  parseSendMessage,
  parseUserRole,
  USER_ROLE_HEADER,
} from './conversation-requests.js';
import { parseListQuery } from './conversation-management-requests.js';
import type { ConversationListItem, ConversationView } from './conversation-views.js';
import { conversationListView, conversationView, decisionWord, summaryView } from './conversation-views.js';

/** The part of Fastify's request the send route reads. */
interface StreamRequest {
  id: string;
  raw: IncomingMessage;
}

/** The part of Fastify's reply the send route answers with, or takes over for the stream. */
interface StreamReply {
  code(status: number): { send(body: unknown): unknown };
  header(name: string, value: string): unknown;
  hijack(): unknown;
  raw: ServerResponse;
}

/** Whether the client asked for the turn feed (`Accept: text/event-stream`; API.md's "turn stream"). */
const acceptsEventStream = (accept: string | string[] | undefined): boolean =>
  [accept ?? []].flat().some((value) => value.toLowerCase().includes('text/event-stream'));

/** A send admitted and submitted: its turn, and what streaming it needs. */
interface AcceptedSend {
  turn: SubmittedOnce;
  tenantId: string;
  /** The client's Last-Event-ID (a replayed turn streams from after it). */
  resume: number;
  prepared: PreparedTurnFeed | undefined;
}

/**
 * The conversation routes of API.md (editor writes, viewer reads), each one call of the agent
 * service.
 */
@Controller('v1/conversations')
export class ConversationsController {
  constructor(
    @Inject(AgentClient) private readonly agent: AgentClient,
    @Inject(TurnFeedService) private readonly turns: TurnFeedService,
    @Inject(EventsFeedService) private readonly feeds: EventsFeedService,
  ) {}

  /**
   * `POST /v1/conversations` `{ agentId, title?, metadata? }` → 201 `{ id, agentId, status, createdAt }`.
   * The Idempotency-Key goes on to the agent, which answers a retry with the first conversation.
   */
  @Post()
  @HttpCode(201)
  @Roles('editor')
  @ForwardsIdempotencyKey()
  async create(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ) {
    const request = parseCreateConversation(body);
    const response = await this.agent.call('createConversation', callContextOf(caller, requestId), {
      request: { ...request, idempotencyKey: idempotencyKeyOf(idempotencyKey) ?? '' },
    });
    return summaryView(answered(response.conversation, 'conversation'));
  }

  /**
   * `GET /v1/conversations?limit=&cursor=&agentId=&userId=&status=&metadata.<key>=` → 200
   * `{ data, nextCursor }`, newest first, only those passing every filter; a bad or unknown
   * parameter: 400 naming it.
   */
  @Get()
  @Roles('viewer')
  async list(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: ConversationListItem[]; nextCursor: string | null }> {
    const { status, ...filters } = parseListQuery({ ...query });
    const response = await this.agent.call('listConversations', callContextOf(caller, requestId), {
      request: { ...filters, status: conversationStatusFromJSON(status) },
    });
    return conversationListView(response);
  }

  /** `GET /v1/conversations/{id}` → the state rebuilt from the event log; another tenant's: 404. */
  @Get(':id')
  @Roles('viewer')
  async get(
    @Param('id') conversationId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<ConversationView> {
    const response = await this.agent.call('getConversation', callContextOf(caller, requestId), {
      request: { conversationId },
    });
    return conversationView(answered(response.conversation, 'conversation'));
  }

  /**
   * `POST /v1/conversations/{id}/messages` `{ content, ifBusy?, context? }` (the end user's role in
   * `X-Keel-User-Role`): with `Accept: text/event-stream`
   * the turn's frames as SSE until it ends (a client leaving stops the reading, never the turn);
   * otherwise 202 `{ turnId }`. Bad body, unknown conversation, busy (409), over budget (402):
   * problem+json before any frame. A retry with the same `Idempotency-Key` starts no second turn:
   * it answers the first turn's id, or streams that turn again from its start (or, with
   * `Last-Event-ID`, from after that id: a dropped turn feed resumes on any gateway instance).
   */
  @Post(':id/messages')
  @Roles('editor')
  @OwnIdempotency()
  @AwaitsRateLimit()
  async send(
    @Param('id') conversationId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @Req() request: StreamRequest,
    @Res() reply: StreamReply,
  ): Promise<void> {
    const streamed = acceptsEventStream(request.raw.headers.accept);
    const closed = new AbortController();
    // A stream's input is opened first: its turn's events then come from the bus, not a read. It
    // is opened while the rate limit answers (a watch changes nothing; `closed` ends it when the
    // request goes no further), and the message goes to the agent only once the request is admitted.
    const input =
      streamed && caller.kind === 'tenant'
        ? this.turns.prepare(caller.tenantId, conversationId, closed.signal)
        : undefined;
    let accepted: AcceptedSend;
    try {
      await admissionOf(request);
      accepted = await this.submitAdmitted(request, { conversationId, body, caller, streamed, input });
    } catch (error) {
      closed.abort();
      throw error;
    }
    const { turn, tenantId, resume, prepared } = accepted;
    if (turn.replayed) reply.header(IDEMPOTENT_REPLAY_HEADER, 'true');
    if (!streamed) {
      reply.code(202).send({ turnId: turn.turnId });
      return;
    }
    this.stream(request, reply, { tenantId, conversationId, turn, resume, prepared }, closed);
  }

  /** Checks an admitted send's request and submits its message once (per Idempotency-Key). */
  private async submitAdmitted(
    request: StreamRequest,
    send: {
      conversationId: string;
      body: unknown;
      caller: Principal;
      streamed: boolean;
      input: PreparedTurnFeed | undefined;
    },
  ): Promise<AcceptedSend> {
    const { conversationId, body, caller, streamed, input } = send;
    const fields = parseSendMessage(body);
    const userRole = parseUserRole(request.raw.headers[USER_ROLE_HEADER]);
    // A retried stream may resume: Last-Event-ID, as on the events feed (a malformed one: 400).
    const lastEventId = request.raw.headers['last-event-id'];
    const resume = streamed ? resumeAfter([lastEventId ?? []].flat()[0], undefined) : 0;
    const idempotencyKey = idempotencyKeyOf(request.raw.headers[IDEMPOTENCY_KEY_HEADER]);
    const context = callContextOf(caller, request.id);
    const turn = await this.turns.submitOnce(context, {
      conversationId,
      ...fields,
      userRole,
      ...(idempotencyKey ? { idempotencyKey } : {}),
    });
    return { turn, tenantId: context.tenantId, resume, prepared: input };
  }

  /** Streams a submitted turn's frames as SSE (from after `resume` when the turn is a replay). */
  private stream(
    request: StreamRequest,
    reply: StreamReply,
    of: {
      tenantId: string;
      conversationId: string;
      turn: SubmittedOnce;
      resume: number;
      prepared: PreparedTurnFeed | undefined;
    },
    closed: AbortController,
  ): void {
    const { tenantId, conversationId, turn } = of;
    const after = turn.replayed ? of.resume : 0;
    const frames = this.turns.follow(tenantId, conversationId, turn, closed.signal, after, of.prepared);
    reply.hijack();
    void this.feeds.serve(
      reply.raw,
      {
        [REQUEST_ID_HEADER]: request.id,
        ...(turn.replayed ? { [IDEMPOTENT_REPLAY_HEADER]: 'true' } : {}),
      },
      () => frames,
      { tenantId, conversationId, turnId: turn.turnId },
      closed,
    );
  }

  /**
   * `POST /v1/conversations/{id}/approvals/{approvalId}` `{ decision, reason? }` → 200; decided: 409;
   * unknown: 404. A retry with the same Idempotency-Key gets the first answer (the agent's log).
   */
  @Post(':id/approvals/:approvalId')
  @HttpCode(200)
  @Roles('editor')
  @ForwardsIdempotencyKey()
  async decide(
    @Param('id') conversationId: string,
    @Param('approvalId') approvalId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<{ approvalId: string; decision: string }> {
    const fields = parseDecideApproval(body);
    const response = await this.agent.call('decideApproval', callContextOf(caller, requestId), {
      request: {
        conversationId,
        approvalId,
        decision: decisionFromJSON(fields.decision),
        reason: fields.reason,
        idempotencyKey: idempotencyKeyOf(idempotencyKey) ?? '',
      },
    });
    return { approvalId: response.approvalId, decision: decisionWord(response.decision) };
  }

  /**
   * `POST /v1/conversations/{id}/cancel` → 202 `{ turnId }`; no turn running: 409. A retry with
   * the same Idempotency-Key is 202 again, cancelling nothing more (the agent's log).
   */
  @Post(':id/cancel')
  @HttpCode(202)
  @Roles('editor')
  @ForwardsIdempotencyKey()
  async cancel(
    @Param('id') conversationId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<{ turnId: string }> {
    const response = await this.agent.call('cancelTurn', callContextOf(caller, requestId), {
      request: { conversationId, idempotencyKey: idempotencyKeyOf(idempotencyKey) ?? '' },
    });
    return { turnId: response.turnId };
  }
}
