import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TenantScope } from '@keel/core';
import { NotFoundError } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { Controller, Get, Inject, Query, Req, Res } from '@nestjs/common';
import { ActivityProjection } from '../activity/activity.service.js';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';
import { REQUEST_ID_HEADER } from '../http/request-id.js';
import { TenantDirectory } from '../tenants/tenant-directory.js';
import { EventsFeedService } from './events-feed.service.js';
import { resumeAfter } from './feed-frames.js';
import { readLogFeed } from './log-feed.js';

interface FeedRequest {
  id: string;
  raw: IncomingMessage;
}

interface FeedReply {
  hijack(): unknown;
  raw: ServerResponse;
}

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value;

/**
 * The log feeds of API.md as SSE: `GET /v1/events` (viewer; every durable event of the caller's
 * tenant) and `GET /v1/operator/events` (operator; every tenant's, `?tenantId=` narrows). Each
 * frame is a conversation feed frame with `conversationId` and `tenantId`, its id the event's
 * global log position. `Last-Event-ID` (or `?after=<position>`, 0 for the whole log) resumes
 * after that position; without either the feed starts at the head of the log (live only).
 * Errors are answered as problem+json before the stream starts.
 */
@Controller('v1')
export class LogFeedController {
  constructor(
    @Inject(EventsFeedService) private readonly feeds: EventsFeedService,
    @Inject(ActivityProjection) private readonly activity: ActivityProjection,
    @Inject(TenantDirectory) private readonly directory: TenantDirectory,
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
  ) {}

  @Get('events')
  @Roles('viewer')
  async tenantEvents(
    @Query('after') after: string | string[] | undefined,
    @Caller() caller: Principal,
    @Req() request: FeedRequest,
    @Res() reply: FeedReply,
  ): Promise<void> {
    if (caller.kind !== 'tenant') throw new Error('the tenant events feed reached without a tenant');
    await this.open({ tenantId: caller.tenantId }, after, request, reply);
  }

  @Get('operator/events')
  @Roles('operator')
  async operatorEvents(
    @Query('after') after: string | string[] | undefined,
    @Query('tenantId') tenantId: string | string[] | undefined,
    @Req() request: FeedRequest,
    @Res() reply: FeedReply,
  ): Promise<void> {
    if (Array.isArray(tenantId) || tenantId === '')
      fail('tenantId', 'tenantId must be given once, not empty');
    if (typeof tenantId === 'string') {
      await this.directory.catchUp();
      if (!this.directory.tenant(tenantId)) throw new NotFoundError(`tenant ${tenantId} not found`);
    }
    await this.open(typeof tenantId === 'string' ? { tenantId } : 'all-tenants', after, request, reply);
  }

  private async open(
    scope: TenantScope,
    after: string | string[] | undefined,
    request: FeedRequest,
    reply: FeedReply,
  ): Promise<void> {
    const lastEventId = single(request.raw.headers['last-event-id']);
    const afterText = single(after);
    let position: number;
    if ((lastEventId !== undefined && lastEventId.trim() !== '') || afterText !== undefined) {
      position = resumeAfter(lastEventId, afterText);
    } else {
      await this.activity.catchUp();
      position = this.activity.headPosition;
    }
    const sources = { store: this.infra.store, pollMs: this.feeds.sources().pollMs };
    reply.hijack();
    void this.feeds.serve(
      reply.raw,
      { [REQUEST_ID_HEADER]: request.id },
      (signal) => readLogFeed(sources, scope, position, signal),
      scope === 'all-tenants' ? { tenantId: 'all-tenants' } : { tenantId: scope.tenantId },
    );
  }
}
