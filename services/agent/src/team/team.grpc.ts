import { NotFoundError, ValidationError, ownValue } from '@keel/core';
import type { CallContext as ProtoCallContext } from '@keel/proto/keel/agent/v1/agent';
import type {
  CancelRunRequest,
  CancelRunResponse,
  GetRunRequest,
  ListRunsRequest,
  StartRunRequest,
  DeleteTeamRequest,
  DeleteTeamResponse,
  GetRunResponse,
  GetTeamRequest,
  GetTeamResponse,
  ListRunsResponse,
  ListTeamsRequest,
  ListTeamsResponse,
  PutTeamRequest,
  PutTeamResponse,
  RunServiceController,
  StartRunResponse,
} from '@keel/proto/keel/run/v1/run';
import { RunServiceControllerMethods } from '@keel/proto/keel/run/v1/run';
import type { KeelLogger } from '@keel/runtime';
import { KEEL_LOGGER, toRpcException } from '@keel/runtime';
import { Controller, Inject } from '@nestjs/common';
import type { CallContext } from '../call-context.js';
import type { Access } from '../grpc/call-context.js';
import { ADMIN, EDITOR, VIEWER, callContextOf, required } from '../grpc/call-context.js';
import { MAX_RUN_PAGE, RunService } from '../run/run.service.js';
import { runMessage } from '../run/run.mapping.js';
import { TenantConfigService } from '../tenant-config/tenant-config.service.js';
import { teamDefinitionOf, teamMessage } from './team.mapping.js';

const now = (): string => new Date().toISOString();

/**
 * keel.run.v1.RunService: teams (tenant configuration, admin writes, any role reads) and runs.
 * Each RPC checks the CallContext and the role and maps errors to gRPC statuses.
 */
@Controller()
@RunServiceControllerMethods()
export class RunController implements RunServiceController {
  constructor(
    @Inject(TenantConfigService) private readonly config: TenantConfigService,
    @Inject(RunService) private readonly runs: RunService,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
  ) {}

  putTeam(request: PutTeamRequest): Promise<PutTeamResponse> {
    return this.call('PutTeam', request.context, ADMIN, async (ctx) => {
      if (!request.team) throw new ValidationError('team is required', { field: 'team' });
      const team = teamDefinitionOf(request.team);
      const state = await this.config.apply(ctx, { type: 'PutTeam', team, at: now() });
      return { team: teamMessage(ownValue(state.teams, team.teamId) ?? team) };
    });
  }

  getTeam(request: GetTeamRequest): Promise<GetTeamResponse> {
    return this.call('GetTeam', request.context, VIEWER, async (ctx) => {
      const teamId = required(request.teamId, 'teamId');
      const team = ownValue((await this.config.load(ctx.tenantId)).teams, teamId);
      if (!team) throw new NotFoundError(`team ${teamId} not found`);
      return { team: teamMessage(team) };
    });
  }

  listTeams(request: ListTeamsRequest): Promise<ListTeamsResponse> {
    return this.call('ListTeams', request.context, VIEWER, async (ctx) => {
      const { teams } = await this.config.load(ctx.tenantId);
      const sorted = Object.values(teams).sort((a, b) => a.teamId.localeCompare(b.teamId));
      return { data: sorted.map(teamMessage) };
    });
  }

  deleteTeam(request: DeleteTeamRequest): Promise<DeleteTeamResponse> {
    return this.call('DeleteTeam', request.context, ADMIN, async (ctx) => {
      const teamId = required(request.teamId, 'teamId');
      await this.config.apply(ctx, { type: 'DeleteTeam', teamId, at: now() });
      return {};
    });
  }

  startRun(request: StartRunRequest): Promise<StartRunResponse> {
    return this.call('StartRun', request.context, EDITOR, async (ctx) => {
      const teamId = required(request.teamId, 'teamId');
      const run = await this.runs.start(
        ctx,
        { teamId, input: request.input, metadata: request.metadata },
        request.idempotencyKey || undefined,
      );
      return { run: runMessage(run) };
    });
  }

  getRun(request: GetRunRequest): Promise<GetRunResponse> {
    return this.call('GetRun', request.context, VIEWER, async (ctx) => {
      const runId = required(request.runId, 'runId');
      return { run: runMessage(await this.runs.get(ctx.tenantId, runId)) };
    });
  }

  listRuns(request: ListRunsRequest): Promise<ListRunsResponse> {
    return this.call('ListRuns', request.context, VIEWER, async (ctx) => {
      const limit = Math.min(request.limit || 50, MAX_RUN_PAGE);
      const { runs, nextCursor } = await this.runs.list(ctx.tenantId, {
        limit,
        ...(request.teamId ? { teamId: request.teamId } : {}),
        ...(request.status ? { status: request.status } : {}),
        ...(request.cursor ? { cursor: request.cursor } : {}),
      });
      return { data: runs.map(runMessage), nextCursor: nextCursor ?? '' };
    });
  }

  cancelRun(request: CancelRunRequest): Promise<CancelRunResponse> {
    return this.call('CancelRun', request.context, EDITOR, async (ctx) => {
      const runId = required(request.runId, 'runId');
      return { run: runMessage(await this.runs.cancel(ctx, runId)) };
    });
  }

  /** Checks the context and role, runs the call, and maps any error to a gRPC status. */
  private async call<T>(
    rpc: string,
    context: ProtoCallContext | undefined,
    access: Access,
    run: (ctx: CallContext) => Promise<T>,
  ): Promise<T> {
    let ctx: CallContext | undefined;
    try {
      ctx = callContextOf(context, access);
      return await run(ctx);
    } catch (error) {
      throw toRpcException(error, this.logger, {
        rpc,
        ...(ctx ? { tenantId: ctx.tenantId, correlationId: ctx.correlationId } : {}),
      });
    }
  }
}
