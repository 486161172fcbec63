import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail, objectWith, optionalWord, requiredString } from '../config/request-fields.js';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../idempotency/idempotency-key.js';
import { ForwardsIdempotencyKey } from '../idempotency/idempotency.interceptor.js';
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

const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') return fail(field, `${field} must be given once`);
  return value;
};

/** `/v1/runs` (API.md "Teams and runs"): editors start and cancel, any tenant role reads. */
@Controller('v1/runs')
export class RunsController {
  constructor(@Inject(RunClient) private readonly runs: RunClient) {}

  /** `POST /v1/runs` `{ teamId, input, metadata? }` → 201 `{ id, status: "pending" }`; unknown team: 404. */
  @Post()
  @HttpCode(201)
  @Roles('editor')
  @ForwardsIdempotencyKey()
  async start(
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<{ id: string; status: string }> {
    const object = objectWith(body, ['teamId', 'input', 'metadata']);
    const request = {
      teamId: requiredString(object.teamId, 'teamId', 64),
      input: requiredString(object.input, 'input', 100_000),
      metadata: parseMetadata(object.metadata),
      // The agent derives the run's id from it: a retry with the same key is the same run.
      idempotencyKey: idempotencyKeyOf(idempotencyKey) ?? '',
    };
    const response = await this.runs.call('startRun', callContextOf(caller, requestId), request);
    const run = answered(response.run, 'run');
    return { id: run.id, status: run.status };
  }

  /** `GET /v1/runs?teamId=&status=` → `{ data }`, newest first. */
  @Get()
  @Roles('viewer')
  async list(
    @Query('teamId') teamId: unknown,
    @Query('status') status: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: RunView[] }> {
    const request = {
      teamId: single(teamId, 'teamId') ?? '',
      status: optionalWord(single(status, 'status'), 'status', STATUSES) ?? '',
    };
    const response = await this.runs.call('listRuns', callContextOf(caller, requestId), request);
    return { data: response.data.map(runView) };
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
