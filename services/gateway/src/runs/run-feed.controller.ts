import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Inject, Param, Query, Req, Res } from '@nestjs/common';
import { NotFoundError, ValidationError, streamName } from '@keel/core';
import { RUN_CATEGORY } from '@keel/events';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { REQUEST_ID_HEADER } from '../http/request-id.js';
import { resumeAfter } from '../feed/feed-frames.js';
import { EventsFeedService } from '../feed/events-feed.service.js';
import { readRunFeed } from './run-feed-frames.js';

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
 * `GET /v1/runs/{id}/events`: the run's events as SSE (run.started, task.started, task.completed,
 * task.failed, run.completed, run.failed, run.cancelled), from its log, then live; resumable with
 * `Last-Event-ID` or `?after=` like a conversation's feed. Another tenant's run: 404.
 */
@Controller('v1/runs')
@Roles('viewer')
export class RunFeedController {
  constructor(
    @Inject(EventsFeedService) private readonly feeds: EventsFeedService,
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
  ) {}

  @Get(':runId/events')
  async events(
    @Param('runId') runId: string,
    @Query('after') after: string | string[] | undefined,
    @Caller() caller: Principal,
    @Req() request: FeedRequest,
    @Res() reply: FeedReply,
  ): Promise<void> {
    const resume = resumeAfter(single(request.raw.headers['last-event-id']), single(after));
    if (caller.kind !== 'tenant') throw new Error('run feed reached without a tenant key');
    const stream = await this.findRun(caller.tenantId, runId);
    reply.hijack();
    const target = { tenantId: caller.tenantId, conversationId: runId, streamName: stream, after: resume };
    void this.feeds.serve(
      reply.raw,
      { [REQUEST_ID_HEADER]: request.id },
      (signal) => readRunFeed(this.feeds.sources(), target, signal),
      { tenantId: caller.tenantId, runId },
    );
  }

  /** The run's stream name, once it is known to exist in the caller's tenant. */
  private async findRun(tenantId: string, runId: string): Promise<string> {
    let stream: string;
    try {
      stream = streamName(RUN_CATEGORY, runId);
    } catch (error) {
      if (error instanceof ValidationError) throw new NotFoundError(`run ${runId} not found`);
      throw error;
    }
    const first = await this.infra.store.read(tenantId, stream, { fromVersion: 1, toVersion: 1 });
    // An erased run (a member conversation of it was deleted) is gone like a deleted conversation.
    if (first.length === 0 || (await this.infra.erasure.isErased(tenantId, stream)))
      throw new NotFoundError(`run ${runId} not found`);
    return stream;
  }
}
