import type { IncomingMessage, ServerResponse } from 'node:http';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail, objectWith, optionalWord, requiredString } from '../config/request-fields.js';
import { parseListConversations } from '../conversations/conversation-requests.js';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../idempotency/idempotency-key.js';
import { OwnIdempotency } from '../idempotency/idempotency.interceptor.js';
import { EventsFeedService } from '../feed/events-feed.service.js';
import { readRunFeed } from './run-feed-frames.js';
import type { FeedFrame } from '../feed/feed-frames.js';
import { REQUEST_ID_HEADER } from '../http/request-id.js';
import { RunClient } from './run.client.js';
import type { RunView } from './run-views.js';
import { runView } from './run-views.js';

const STATUSES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
/** Most metadata keys a run carries, and their shape (as a conversation's). */
const METADATA_KEY = /^[A-Za-z0-9_-]{1,64}$/;

const parseMetadata = (value: unknown): Record<string, string> => {
  if (value === undefined) return {};
  const object = objectWith(value, Object.keys(value as object), 'metadata');
  const entries = Object.entries(object);
  if (entries.length > 64) fail('metadata', 'metadata must have at most 64 keys');
  for (const [key, item] of entries) {
    if (!METADATA_KEY.test(key))
      fail('metadata', `metadata key "${key.slice(0, 64)}" must match ^[A-Za-z0-9_-]{1,64}$`);
    if (typeof item !== 'string' || item.length > 512)
      fail(`metadata.${key}`, `metadata.${key} must be a string of at most 512 characters`);
  }
  return object as Record<string, string>;
};

/** The request as the streamed start reads it. */
interface StreamRequest {
  id: string;
  raw: IncomingMessage;
}

/** The part of Fastify's reply the start answers with, or takes over for the stream. */
interface StreamReply {
  code(status: number): { send(body: unknown): unknown };
  hijack(): unknown;
  raw: ServerResponse;
}

const RUN_ENDS: ReadonlySet<string> = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/** A run's frames up to and including the one that ends it. */
async function* untilRunEnds(frames: AsyncGenerator<FeedFrame>): AsyncGenerator<FeedFrame, void, undefined> {
  for await (const frame of frames) {
    yield frame;
    if (RUN_ENDS.has(frame.event)) return;
  }
}

const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** `/v1/runs` (API.md "Teams and runs"): editors start and cancel, any tenant role reads. */
@Controller('v1/runs')
export class RunsController {
  constructor(
    @Inject(RunClient) private readonly runs: RunClient,
    @Inject(EventsFeedService) private readonly feeds: EventsFeedService,
  ) {}

  /**
   * `POST /v1/runs` `{ teamId, input, metadata? }` → 201 `{ id, status: "pending" }`; unknown team:
   * 404. With `Accept: text/event-stream`: the run's stream until it ends. The Idempotency-Key goes
   * to the agent (the run's id is derived from it): a retry is the same run, streamed again.
   */
  @Post()
  @Roles('editor')
  @OwnIdempotency()
  async start(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @Req() request: StreamRequest,
    @Res() reply: StreamReply,
  ): Promise<void> {
    const object = objectWith(body, ['teamId', 'input', 'metadata']);
    const fields = {
      teamId: requiredString(object.teamId, 'teamId', 64),
      input: requiredString(object.input, 'input', 100_000),
      metadata: parseMetadata(object.metadata),
      idempotencyKey: idempotencyKeyOf(request.raw.headers[IDEMPOTENCY_KEY_HEADER]) ?? '',
    };
    const context = callContextOf(caller, request.id);
    const run = answered((await this.runs.call('startRun', context, fields)).run, 'run');
    const accept = [request.raw.headers.accept ?? []].flat().join(',');
    if (!accept.includes('text/event-stream')) {
      reply.code(201).send({ id: run.id, status: run.status });
      return;
    }
    const target = {
      tenantId: context.tenantId,
      conversationId: run.id,
      streamName: `run-${run.id}`,
      after: 0,
    };
    reply.hijack();
    void this.feeds.serve(
      reply.raw,
      { [REQUEST_ID_HEADER]: request.id },
      (signal) => untilRunEnds(readRunFeed(this.feeds.sources(), target, signal)),
      { tenantId: context.tenantId, runId: run.id },
    );
  }

  /** `GET /v1/runs?teamId=&status=&limit=&cursor=` → `{ data, nextCursor }`, newest first. */
  @Get()
  @Roles('viewer')
  async list(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: RunView[]; nextCursor: string | null }> {
    const request = {
      teamId: single(query.teamId, 'teamId') ?? '',
      status: optionalWord(single(query.status, 'status'), 'status', STATUSES) ?? '',
      // Pages as GET /v1/conversations pages: limit 1 to its maximum, an opaque cursor.
      ...parseListConversations({ limit: query.limit, cursor: query.cursor }),
    };
    const response = await this.runs.call('listRuns', callContextOf(caller, requestId), request);
    return { data: response.data.map(runView), nextCursor: response.nextCursor || null };
  }

  /** `GET /v1/runs/{id}` → the run rebuilt from its log; another tenant's: 404. */
  @Get(':id')
  @Roles('viewer')
  async get(
    @Param('id') runId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<RunView> {
    const response = await this.runs.call('getRun', callContextOf(caller, requestId), { runId });
    return runView(answered(response.run, 'run'));
  }

  /** `POST /v1/runs/{id}/cancel` → 202 the run; its running tasks' turns are cancelled; an ended run: 409. */
  @Post(':id/cancel')
  @HttpCode(202)
  @Roles('editor')
  async cancel(
    @Param('id') runId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<RunView> {
    const response = await this.runs.call('cancelRun', callContextOf(caller, requestId), { runId });
    return runView(answered(response.run, 'run'));
  }
}
