import { once } from 'node:events';
import type { Metadata } from '@grpc/grpc-js';
import { ValidationError } from '@keel/core';
import type {
  CancelTurnRequest,
  CancelTurnResponse,
  ConversationServiceController,
  CreateConversationRequest,
  CreateConversationResponse,
  DecideApprovalRequest,
  DecideApprovalResponse,
  GetConversationRequest,
  GetConversationResponse,
  ListConversationsRequest,
  ListConversationsResponse,
  SendMessageRequest,
  SubmitToolResultRequest,
  SubmitToolResultResponse,
  TurnEvent,
} from '@keel/proto/keel/conversations/v1/conversations';
import {
  ConversationServiceControllerMethods,
  conversationStatusFromJSON,
  decisionFromJSON,
} from '@keel/proto/keel/conversations/v1/conversations';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import { from, Observable } from 'rxjs';
import type { CallContext } from '../agent-client/agent.client.js';
import { AgentClient, callContextOf } from '../agent-client/agent.client.js';
import type { RouteRole } from '../auth/principal.js';
import {
  MAX_CONTENT_CHARS,
  USER_ROLE_HEADER,
  parseContextJson,
  parseCreateConversation,
  parseUserRole,
} from '../conversations/conversation-requests.js';
import type { SendMessageFields } from '../conversations/conversation-requests.js';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf, tenantKeyScope } from '../idempotency/idempotency-key.js';
import { IdempotencyService } from '../idempotency/idempotency.service.js';
import { TurnFeedService } from '../feed/turn-feed.service.js';
import type { HeaderSink } from './grpc-caller.js';
import { GrpcCallerResolver } from './grpc-caller.js';
import { rpcErrorOf } from './rpc-error.js';
import { turnEventOf } from './turn-events.js';

const EDITOR: readonly RouteRole[] = ['editor'];
const VIEWER: readonly RouteRole[] = ['viewer'];

/** The server-streaming call as far as backpressure goes (grpc-js ServerWritableStream). */
interface WritableCall extends HeaderSink {
  writableNeedDrain?: boolean;
  on(event: 'drain', listener: () => void): unknown;
}

const IF_BUSY: Readonly<Record<string, SendMessageFields['ifBusy']>> = {
  IF_BUSY_UNSPECIFIED: 'IF_BUSY_REJECT',
  IF_BUSY_REJECT: 'IF_BUSY_REJECT',
  IF_BUSY_ENQUEUE: 'IF_BUSY_ENQUEUE',
  IF_BUSY_INTERRUPT: 'IF_BUSY_INTERRUPT',
};

/**
 * The call's idempotency key: the request's `idempotency_key`, else the `idempotency-key`
 * metadata (as HTTP's header); empty means none. A malformed one: INVALID_ARGUMENT naming it.
 */
const idempotencyKeyFrom = (
  field: string | undefined,
  metadata: Metadata | undefined,
): string | undefined => {
  if (field) return idempotencyKeyOf(field);
  const values = (metadata?.get(IDEMPOTENCY_KEY_HEADER) ?? []).map(String);
  if (values.length === 0) return undefined;
  // More than one value is refused, as a repeated HTTP header is.
  return idempotencyKeyOf(values.length === 1 ? values[0] : values);
};

/** Checks SendMessage's own fields as the HTTP body check does (content 1..MAX chars, a known if_busy). */
const sendFields = (
  request: SendMessageRequest,
  metadata: Metadata | undefined,
): SendMessageFields & { conversationId: string; userRole: string } => {
  const conversationId = request.conversationId ?? '';
  if (conversationId === '')
    throw new ValidationError('conversation_id is required', { field: 'conversation_id' });
  const content = request.content ?? '';
  if (content.length === 0 || content.length > MAX_CONTENT_CHARS) {
    throw new ValidationError(`content must be 1 to ${MAX_CONTENT_CHARS} characters`, { field: 'content' });
  }
  // proto-loader hands enums over by name; a number outside the enum arrives as the number.
  const ifBusy = IF_BUSY[String(request.ifBusy ?? 'IF_BUSY_UNSPECIFIED')];
  if (!ifBusy)
    throw new ValidationError('if_busy must be REJECT, ENQUEUE or INTERRUPT', { field: 'if_busy' });
  const replaceFrom = request.replaceFrom ?? '';
  const contextJson = parseContextJson(request.contextJson ?? '');
  // The role in the request, else in `x-keel-user-role` metadata (as HTTP's header).
  const role = request.userRole || metadata?.get(USER_ROLE_HEADER)[0]?.toString();
  const userRole = role ? parseUserRole(role, 'user_role') : '';
  return { conversationId, content, ifBusy, ...(replaceFrom ? { replaceFrom } : {}), contextJson, userRole };
};

/**
 * keel.conversations.v1.ConversationService, the public conversation API over gRPC: the caller
 * is resolved from its metadata as HTTP resolves it, each unary RPC is one call of the agent
 * service, and SendMessage streams the same frames as the HTTP turn feed (TurnFeedService),
 * as TurnEvents. A caller that goes away stops its reading, never the turn.
 */
@Controller()
@ConversationServiceControllerMethods()
export class ConversationsGrpcController implements ConversationServiceController {
  constructor(
    @Inject(GrpcCallerResolver) private readonly callers: GrpcCallerResolver,
    @Inject(AgentClient) private readonly agent: AgentClient,
    @Inject(TurnFeedService) private readonly turns: TurnFeedService,
    @Inject(IdempotencyService) private readonly idempotency: IdempotencyService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  createConversation(
    request: CreateConversationRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<CreateConversationResponse> {
    return this.unary('CreateConversation', EDITOR, metadata, call, request.actingUserId, (context) => {
      const fields = parseCreateConversation({
        agentId: request.agentId,
        ...(request.title ? { title: request.title } : {}),
        metadata: request.metadata ?? {},
      });
      const key = idempotencyKeyFrom(request.idempotencyKey, metadata);
      return this.once(context, 'CreateConversation', key, fields, () =>
        this.agent.call('createConversation', context, { request: { ...fields, idempotencyKey: key ?? '' } }),
      );
    });
  }

  getConversation(
    request: GetConversationRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<GetConversationResponse> {
    return this.unary('GetConversation', VIEWER, metadata, call, undefined, (context) =>
      this.agent.call('getConversation', context, { request: { conversationId: request.conversationId } }),
    );
  }

  listConversations(
    request: ListConversationsRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<ListConversationsResponse> {
    return this.unary('ListConversations', VIEWER, metadata, call, undefined, (context) =>
      this.agent.call('listConversations', context, {
        // The filters pass through: the agent reads each (an empty one filters nothing).
        request: {
          limit: request.limit ?? 0,
          cursor: request.cursor ?? '',
          agentId: request.agentId ?? '',
          userId: request.userId ?? '',
          // Nest's loader hands enums over by name: the number the agent's request encodes.
          status: conversationStatusFromJSON(request.status ?? 0),
          metadata: { ...request.metadata },
        },
      }),
    );
  }

  decideApproval(
    request: DecideApprovalRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<DecideApprovalResponse> {
    const { conversationId, approvalId, decision, reason } = request;
    return this.unary('DecideApproval', EDITOR, metadata, call, request.actingUserId, (context) => {
      const key = idempotencyKeyFrom(request.idempotencyKey, metadata);
      return this.once(
        context,
        `DecideApproval ${conversationId}/${approvalId}`,
        key,
        { decision, reason },
        () =>
          this.agent.call('decideApproval', context, {
            request: {
              conversationId,
              approvalId,
              // Nest's proto-loader hands the enum over by name (typed as the generated number).
              decision: decisionFromJSON(decision),
              reason,
              idempotencyKey: key ?? '',
            },
          }),
      );
    });
  }

  cancelTurn(
    request: CancelTurnRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<CancelTurnResponse> {
    const { conversationId } = request;
    return this.unary('CancelTurn', EDITOR, metadata, call, request.actingUserId, (context) => {
      const key = idempotencyKeyFrom(request.idempotencyKey, metadata);
      return this.once(context, `CancelTurn ${conversationId}`, key, {}, () =>
        this.agent.call('cancelTurn', context, { request: { conversationId, idempotencyKey: key ?? '' } }),
      );
    });
  }

  /** A client tool call's answer (API.md "Client tools"); the agent refuses a second or late one. */
  submitToolResult(
    request: SubmitToolResultRequest,
    metadata?: Metadata,
    call?: HeaderSink,
  ): Observable<SubmitToolResultResponse> {
    const { conversationId, toolCallId, ok, resultJson, errorMessage } = request;
    return this.unary('SubmitToolResult', EDITOR, metadata, call, request.actingUserId, (context) => {
      const key = idempotencyKeyFrom(request.idempotencyKey, metadata);
      const answer = {
        ok,
        ...(ok ? { resultJson: resultJson ?? '' } : { errorMessage: errorMessage ?? '' }),
      };
      return this.once(context, `SubmitToolResult ${conversationId}/${toolCallId}`, key, answer, () =>
        this.agent.call('submitToolResult', context, { request: { conversationId, toolCallId, ...answer } }),
      );
    });
  }

  sendMessage(request: SendMessageRequest, metadata?: Metadata, call?: WritableCall): Observable<TurnEvent> {
    return new Observable<TurnEvent>((subscriber) => {
      // Aborted when the caller goes away (Nest unsubscribes): the reading stops, the turn runs on.
      const reading = new AbortController();
      let context: CallContext | undefined;
      void (async () => {
        try {
          const caller = await this.callers.resolve(metadata, EDITOR, 'SendMessage', {
            actingUserId: request.actingUserId,
            ...(call ? { call } : {}),
          });
          context = callContextOf(caller.principal, caller.requestId);
          const fields = sendFields(request, metadata);
          const idempotencyKey = idempotencyKeyFrom(request.idempotencyKey, metadata);
          const turn = await this.turns.sendAndStream(
            context,
            { ...fields, ...(idempotencyKey ? { idempotencyKey } : {}) },
            reading.signal,
          );
          for await (const frame of turn.frames) {
            if (subscriber.closed) break;
            const event = turnEventOf(frame);
            if (!event) continue;
            subscriber.next(event);
            // Nest writes synchronously in next(); a full socket buffer waits for the client here,
            // so a slow reader holds no more than the feed's own bounded buffer.
            if (call?.writableNeedDrain) await once(call as never, 'drain', { signal: reading.signal });
          }
          subscriber.complete();
        } catch (error) {
          if (subscriber.closed || reading.signal.aborted) return;
          subscriber.error(rpcErrorOf(error, this.logger, this.logContext('SendMessage', context)));
        }
      })();
      return () => reading.abort();
    });
  }

  /** One unary RPC: resolve the caller, build its CallContext, run `work`, map a failure to its status. */
  private unary<T>(
    method: string,
    roles: readonly RouteRole[],
    metadata: Metadata | undefined,
    call: HeaderSink | undefined,
    actingUserId: string | undefined,
    work: (context: CallContext) => Promise<T>,
  ): Observable<T> {
    let context: CallContext | undefined;
    const run = async (): Promise<T> => {
      try {
        const caller = await this.callers.resolve(metadata, roles, method, {
          ...(actingUserId ? { actingUserId } : {}),
          ...(call ? { call } : {}),
        });
        context = callContextOf(caller.principal, caller.requestId);
        return await work(context);
      } catch (error) {
        throw rpcErrorOf(error, this.logger, this.logContext(method, context));
      }
    };
    return from(run());
  }

  /**
   * `idempotency_key` (the proto's, or `idempotency-key` metadata, as HTTP's Idempotency-Key),
   * passed on to the agent (whose conversation log answers a retry with the first outcome, so
   * the key is `deduplicated` there), and through IdempotencyService.once as the fast path:
   * the first call with a key runs and its response is kept 24 h per tenant and RPC; a retry with
   * the same request gets it back without the work being done again; another request with the
   * key, or a retry while the first runs, is ABORTED. Kept apart from HTTP's records (the
   * responses differ in shape).
   */
  private async once<T>(
    context: CallContext,
    operation: string,
    rawKey: string | undefined,
    body: unknown,
    work: () => Promise<T>,
  ): Promise<T> {
    const target = {
      scope: tenantKeyScope(context.tenantId),
      operation: `gRPC ConversationService.${operation}`,
      key: rawKey ? idempotencyKeyOf(rawKey) : undefined,
      body,
      deduplicated: true,
    };
    const outcome = await this.idempotency.once(target, work, (response): { body: T } => ({
      body: response,
    }));
    return outcome.replayed ? outcome.recorded.body : outcome.result;
  }

  private logContext(method: string, context: CallContext | undefined): Record<string, unknown> {
    return {
      rpc: `ConversationService.${method}`,
      ...(context ? { tenantId: context.tenantId, correlationId: context.correlationId } : {}),
    };
  }
}
