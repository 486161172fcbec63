import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Inject, Param, Query, Req, Res } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { REQUEST_ID_HEADER } from '../http/request-id.js';
import { resumeAfter } from './feed-frames.js';
import { EventsFeedService } from './events-feed.service.js';

/** The part of Fastify's request the feed reads. */
interface FeedRequest {
  id: string;
  raw: IncomingMessage;
}

/** The part of Fastify's reply the feed takes over. */
interface FeedReply {
  hijack(): unknown;
  raw: ServerResponse;
}

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * `GET /v1/conversations/{id}/events`: the conversation's events feed as SSE. Errors (bad
 * resume id, unknown or another tenant's conversation) are answered as problem+json before the
 * stream starts; then the reply is hijacked and written through Node's response, unbuffered.
 */
@Controller('v1/conversations')
@Roles('viewer')
export class EventsFeedController {
  constructor(@Inject(EventsFeedService) private readonly feeds: EventsFeedService) {}

  /** Every durable event after `Last-Event-ID` / `?after=` (default: from the start), then live ones and deltas. */
  @Get(':conversationId/events')
  async events(
    @Param('conversationId') conversationId: string,
    @Query('after') after: string | string[] | undefined,
    @Caller() caller: Principal,
    @Req() request: FeedRequest,
    @Res() reply: FeedReply,
  ): Promise<void> {
    const resume = resumeAfter(single(request.raw.headers['last-event-id']), single(after));
    // @Roles('viewer') admits tenant keys only: the operator has no tenant to read from.
    if (caller.kind !== 'tenant') throw new Error('events feed reached without a tenant key');
    const streamName = await this.feeds.findConversation(caller.tenantId, conversationId);
    reply.hijack();
    void this.feeds.stream(
      reply.raw,
      { [REQUEST_ID_HEADER]: request.id },
      { tenantId: caller.tenantId, conversationId, streamName, after: resume },
    );
  }
}
