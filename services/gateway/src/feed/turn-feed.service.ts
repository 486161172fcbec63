import { streamName } from '@keel/core';
import { CONVERSATION_CATEGORY } from '@keel/events';
import { ifBusyFromJSON } from '@keel/proto/keel/conversations/v1/conversations';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import { Inject, Injectable } from '@nestjs/common';
import type { CallContext } from '../agent-client/agent.client.js';
import { AgentClient } from '../agent-client/agent.client.js';
import type { SendMessageFields } from '../conversations/conversation-requests.js';
import { idempotencyKeyOf, tenantKeyScope } from '../idempotency/idempotency-key.js';
import { IdempotencyService } from '../idempotency/idempotency.service.js';
import { EventsFeedService } from './events-feed.service.js';
import type { FeedFrame } from './feed-frames.js';
import type { FeedInput } from './feed-input.js';
import { openFeedInput, readFeed } from './feed-reader.js';
import { turnFrames } from './turn-frames.js';

/** A message to send: the conversation, the checked body fields, and the caller's Idempotency-Key. */
export interface TurnRequest extends SendMessageFields {
  conversationId: string;
  /** The end user's role (`X-Keel-User-Role`); empty or absent: none. */
  userRole?: string;
  idempotencyKey?: string;
  /** A retry (same Idempotency-Key) resumes after this version (the client's `Last-Event-ID`). */
  resumeAfter?: number;
}

/** A turn the agent recorded, and where in the conversation its events start. */
export interface SubmittedTurn {
  turnId: string;
  /** The conversation version just before the message: the turn's events all come after it. */
  version: number;
}

/** A turn submitted once per Idempotency-Key: `replayed` when a retry got the first request's turn. */
export interface SubmittedOnce extends SubmittedTurn {
  replayed: boolean;
}

/** A turn feed's input opened before its message was submitted, and the signal it stops with. */
export interface PreparedTurnFeed {
  input: FeedInput;
  stop: AbortSignal;
}

/** A started (or queued) turn and its frames. */
export interface TurnFeed extends SubmittedOnce {
  /** The turn's frames, turn.started to its terminal event; reading stops when the signal aborts. */
  frames: AsyncIterable<FeedFrame>;
}

/**
 * The turn feed, for every edge that serves it (HTTP SSE, gRPC SendMessage): submits the
 * message through the agent, then reads the conversation's feed from the version before it and
 * keeps the frames of that turn only, until the turn ends. Waiting for an approval keeps the
 * feed open. Stopping the reading (the caller's signal, gateway shutdown) never stops the turn.
 */
@Injectable()
export class TurnFeedService implements BeforeApplicationShutdown {
  private readonly shutdown = new AbortController();

  constructor(
    @Inject(AgentClient) private readonly agent: AgentClient,
    @Inject(EventsFeedService) private readonly feeds: EventsFeedService,
    @Inject(IdempotencyService) private readonly idempotency: IdempotencyService,
  ) {}

  /**
   * Submits the message through the agent and yields the frames of the turn it started, until
   * that turn ends. Rejects (before any frame) with the agent's typed error: bad input, unknown
   * conversation (404), busy (409), budget (402), unavailable. A retry with the same
   * Idempotency-Key starts no second turn: it streams the first one again (after `resumeAfter`).
   */
  async sendAndStream(caller: CallContext, request: TurnRequest, signal: AbortSignal): Promise<TurnFeed> {
    const prepared = this.prepare(caller.tenantId, request.conversationId, signal);
    let turn: SubmittedOnce;
    try {
      turn = await this.submitOnce(caller, request);
    } catch (error) {
      prepared?.input.close();
      throw error;
    }
    const resume = turn.replayed ? (request.resumeAfter ?? 0) : 0;
    return {
      ...turn,
      frames: this.follow(caller.tenantId, request.conversationId, turn, signal, resume, prepared),
    };
  }

  /**
   * Opens a turn feed's input before its message goes to the agent (see readFeed's OpenedInput):
   * its watch is live once the bus's server answers (openFeedInput), so the turn's events come
   * from the watch without a first read of the log; meanwhile this process fetches the
   * conversation's data key, alongside the submission (its events come sealed, and a watch never
   * fetches a key). Undefined for a conversation id that names no stream (the agent answers it).
   * Stopped with `signal` (or the gateway's shutdown); close its input when the submission fails.
   */
  prepare(tenantId: string, conversationId: string, signal: AbortSignal): PreparedTurnFeed | undefined {
    let stream: string;
    try {
      stream = streamName(CONVERSATION_CATEGORY, conversationId);
    } catch {
      return undefined;
    }
    const stop = AbortSignal.any([signal, this.shutdown.signal]);
    this.feeds.holdKey(tenantId, stream);
    const input = openFeedInput(this.feeds.sources(), { tenantId, conversationId, streamName: stream }, stop);
    return { input, stop };
  }

  /**
   * Submits the message once per Idempotency-Key (per tenant and conversation, HTTP and gRPC
   * alike): the first request submits and records its turn; a retry with the same content gets
   * that turn back (`replayed`); another content, or a retry while the first runs: 409.
   */
  async submitOnce(caller: CallContext, request: TurnRequest): Promise<SubmittedOnce> {
    const target = {
      scope: tenantKeyScope(caller.tenantId),
      operation: `POST /v1/conversations/${request.conversationId}/messages`,
      key: request.idempotencyKey ? idempotencyKeyOf(request.idempotencyKey) : undefined,
      body: {
        content: request.content,
        ifBusy: request.ifBusy,
        context: request.contextJson ?? '',
        userRole: request.userRole ?? '',
        replaceFrom: request.replaceFrom ?? '',
      },
      // The key goes on to the agent, whose log answers a retry with the first turn.
      deduplicated: true,
    };
    const outcome = await this.idempotency.once(target, () => this.submit(caller, request));
    return outcome.replayed
      ? { ...outcome.recorded, replayed: true }
      : { ...outcome.result, replayed: false };
  }

  /** Submits the message through the agent: the turn it started or queued, and its start version. */
  async submit(caller: CallContext, request: TurnRequest): Promise<SubmittedTurn> {
    const { conversationId, content, ifBusy, idempotencyKey, contextJson, userRole } = request;
    const response = await this.agent.call('submitMessage', caller, {
      request: {
        conversationId,
        content,
        ifBusy: ifBusyFromJSON(ifBusy),
        idempotencyKey: idempotencyKey ?? '',
        contextJson: contextJson ?? '',
        userRole: userRole ?? '',
        replaceFrom: request.replaceFrom ?? '',
      },
    });
    return { turnId: response.turnId, version: Number(response.version ?? 0) };
  }

  /**
   * The frames of a turn already submitted (a retried request re-streams its first turn): read
   * from `turn.version`, so a turn that already ended is replayed from the log, whole; or only
   * what follows version `resumeAfter` (the client's `Last-Event-ID`).
   */
  follow(
    tenantId: string,
    conversationId: string,
    turn: SubmittedTurn & { replayed?: boolean },
    signal: AbortSignal,
    resumeAfter = 0,
    prepared?: PreparedTurnFeed,
  ): AsyncIterable<FeedFrame> {
    const target = {
      tenantId,
      conversationId,
      streamName: streamName(CONVERSATION_CATEGORY, conversationId),
      after: turn.version,
    };
    const stop = prepared?.stop ?? AbortSignal.any([signal, this.shutdown.signal]);
    // A turn submitted now was committed after the input was live; a replayed one long before. (An
    // agent-side replay of a first request that died answers an older turn as new: the reader
    // then finds nothing on the watch and reads the log after its grace period.)
    const opened = prepared && { input: prepared.input, committedAfterLive: turn.replayed === false };
    return turnFrames(readFeed(this.feeds.sources(), target, stop, opened), turn.turnId, resumeAfter);
  }

  /** Ends every turn feed's reading (their turns run on), so the gateway can stop. */
  beforeApplicationShutdown(): void {
    this.shutdown.abort();
  }
}
