import { createHash } from 'node:crypto';
import type { EventStore } from '@keel/core';
import { CommandHandler, NotFoundError, ValidationError, ownValue, streamName, uuidv7 } from '@keel/core';
import type { EventData } from '@keel/core';
import type { RunEvent } from '@keel/events';
import { RUN_CATEGORY } from '@keel/events';
import type { CallContext } from '../call-context.js';
import { eventMetadata } from '../call-context.js';
import type { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import type { RunCommand } from './run.decider.js';
import { runDecider } from './run.decider.js';
import type { RunState, RunStatus } from './run.state.js';

/** Category of a tenant's run index: `runindex-<tenantId>`, one `RunIndexed` per run, oldest first. */
export const RUN_INDEX_CATEGORY = 'runindex';
type RunIndexed = EventData<'RunIndexed', { runId: string; teamId: string; at: string }>;

/** Most runs one list answers. */
export const MAX_RUN_PAGE = 200;
/** The largest run input. */
export const MAX_RUN_INPUT_CHARS = 100_000;

const RUN_STATUSES: readonly RunStatus[] = ['pending', 'running', 'completed', 'failed', 'cancelled'];

/** The stream of run `runId`. */
export const runStream = (runId: string): string => streamName(RUN_CATEGORY, runId);

/** A page's cursor: the index position of its last run (the next page starts below it). */
const cursorOf = (last: RunState, index: ReadonlyArray<{ version: number; data: unknown }>): string => {
  const entry = index.find((e) => (e.data as { runId?: string }).runId === last.runId);
  return Buffer.from(`runs:${entry?.version ?? 0}`).toString('base64url');
};

/** The index position a cursor names; anything else is a 400 naming `cursor`. */
const positionOf = (cursor: string): number => {
  const match = /^runs:([1-9][0-9]{0,14})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw new ValidationError('cursor is not a cursor this list returned', { field: 'cursor' });
  return Number(match[1]);
};

/** A run id from the caller's Idempotency-Key (same key, same run) or a fresh one. */
const runIdOf = (tenantId: string, idempotencyKey: string | undefined): string =>
  idempotencyKey
    ? `run_${createHash('sha256')
        .update(JSON.stringify([tenantId, 'StartRun', idempotencyKey]))
        .digest('hex')
        .slice(0, 32)}`
    : `run_${uuidv7()}`;

/** Runs of teams: started from a team's stored definition, read and cancelled by the tenant's keys. */
export class RunService {
  private readonly handler: CommandHandler<RunState, RunCommand, RunEvent>;

  constructor(
    private readonly store: EventStore,
    private readonly config: TenantConfigService,
    private readonly clock: () => string = () => new Date().toISOString(),
  ) {
    this.handler = new CommandHandler(store, runDecider, { maxRetries: 10 });
  }

  /** Starts a run of `teamId` (404 when the tenant has no such team); a repeated key starts nothing twice. */
  async start(
    ctx: CallContext,
    input: { teamId: string; input: string; metadata: Record<string, string> },
    idempotencyKey?: string,
  ): Promise<RunState> {
    if (input.input.trim() === '') throw new ValidationError('input is required', { field: 'input' });
    if (input.input.length > MAX_RUN_INPUT_CHARS) {
      throw new ValidationError(`input must be at most ${MAX_RUN_INPUT_CHARS} characters`, {
        field: 'input',
      });
    }
    const team = ownValue((await this.config.load(ctx.tenantId)).teams, input.teamId);
    if (!team) throw new NotFoundError(`team ${input.teamId} not found`);
    const runId = runIdOf(ctx.tenantId, idempotencyKey);
    const at = this.clock();
    // Indexed first (once per run id): a run in the log is always listed.
    const indexed: RunIndexed = { type: 'RunIndexed', data: { runId, teamId: team.teamId, at } };
    await this.store.append(ctx.tenantId, streamName(RUN_INDEX_CATEGORY, ctx.tenantId), [indexed], {
      commitId: `runindex-${runId}`,
    });
    const result = await this.handler.handle(
      ctx.tenantId,
      runStream(runId),
      { type: 'StartRun', runId, team, input: input.input, metadata: input.metadata, at },
      { metadata: eventMetadata(ctx) },
    );
    return result.state;
  }

  /** The run rebuilt from its log; unknown (or another tenant's): 404. */
  async get(tenantId: string, runId: string): Promise<RunState & { version: number }> {
    const { state, version } = await this.handler.load(tenantId, runStream(runId));
    if (!state.team) throw new NotFoundError(`run ${runId} not found`);
    return { ...state, version };
  }

  /** Applies a command to a run (the process manager's and cancel's way in). */
  async apply(tenantId: string, runId: string, command: RunCommand, metadata: EventData['metadata'] = {}) {
    return this.handler.handle(tenantId, runStream(runId), command, { metadata });
  }

  /** Cancels a running run: 409 when it already ended. */
  async cancel(ctx: CallContext, runId: string): Promise<RunState> {
    await this.get(ctx.tenantId, runId);
    const result = await this.apply(
      ctx.tenantId,
      runId,
      { type: 'CancelRun', at: this.clock() },
      eventMetadata(ctx),
    );
    return result.state;
  }

  /**
   * One page of the tenant's runs, newest first, of `teamId` and in `status` when given, from
   * `cursor` (a `nextCursor` of the page before: the index position it stopped at).
   */
  async list(
    tenantId: string,
    filter: { teamId?: string; status?: string; limit: number; cursor?: string },
  ): Promise<{ runs: RunState[]; nextCursor?: string }> {
    if (filter.status && !(RUN_STATUSES as readonly string[]).includes(filter.status)) {
      throw new ValidationError(`status must be one of ${RUN_STATUSES.join(', ')}`, { field: 'status' });
    }
    const before = filter.cursor ? positionOf(filter.cursor) : Number.POSITIVE_INFINITY;
    const index = await this.store.read(tenantId, streamName(RUN_INDEX_CATEGORY, tenantId));
    const runs: RunState[] = [];
    const newestFirst = [...index].reverse().filter((e) => e.version < before);
    for (const entry of newestFirst as unknown as Array<RunIndexed & { version: number }>) {
      if (runs.length >= filter.limit) return { runs, nextCursor: cursorOf(runs.at(-1)!, newestFirst) };
      if (filter.teamId && entry.data.teamId !== filter.teamId) continue;
      const { state } = await this.handler.load(tenantId, runStream(entry.data.runId));
      if (!state.team || (filter.status && state.status !== filter.status)) continue;
      runs.push(state);
    }
    return { runs };
  }
}
