import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Put } from '@nestjs/common';
import { answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { RunClient } from './run.client.js';
import { parsePutTeam } from './team-requests.js';
import type { TeamView } from './team-views.js';
import { teamView } from './team-views.js';

/** `/v1/teams` (API.md "Teams and runs"): admin configures, any tenant role reads. */
@Controller('v1/teams')
export class TeamsController {
  constructor(@Inject(RunClient) private readonly runs: RunClient) {}

  /** `PUT /v1/teams/{teamId}` → the stored team; a bad definition is 400 naming the field. */
  @Put(':teamId')
  @Roles('admin')
  async put(
    @Param('teamId') teamId: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<TeamView> {
    const team = parsePutTeam(teamId, body);
    const response = await this.runs.call('putTeam', callContextOf(caller, requestId), { team });
    return teamView(answered(response.team, 'team'));
  }

  /** `GET /v1/teams` → the tenant's teams ordered by id. */
  @Get()
  @Roles('viewer')
  async list(@Caller() caller: Principal, @RequestId() requestId: string): Promise<{ data: TeamView[] }> {
    const response = await this.runs.call('listTeams', callContextOf(caller, requestId));
    return { data: response.data.map(teamView) };
  }

  /** `GET /v1/teams/{teamId}` → one team; unknown (or another tenant's): 404. */
  @Get(':teamId')
  @Roles('viewer')
  async get(
    @Param('teamId') teamId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<TeamView> {
    const response = await this.runs.call('getTeam', callContextOf(caller, requestId), { teamId });
    return teamView(answered(response.team, 'team'));
  }

  /** `DELETE /v1/teams/{teamId}` → 204; runs already started go on. */
  @Delete(':teamId')
  @Roles('admin')
  @HttpCode(204)
  async delete(
    @Param('teamId') teamId: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    await this.runs.call('deleteTeam', callContextOf(caller, requestId), { teamId });
  }
}
