import { Injectable } from '@nestjs/common';
import {
  CancelRunRequest,
  DeleteTeamRequest,
  GetRunRequest,
  GetTeamRequest,
  ListRunsRequest,
  ListTeamsRequest,
  PutTeamRequest,
  RunServiceService,
  StartRunRequest,
} from '@keel/proto/keel/run/v1/run';
import { AgentSideClient } from '../agent-client/agent-side-client.js';

type RunService = typeof RunServiceService;

/** A typed client of keel.run.v1.RunService (teams and runs), served by the agent. */
@Injectable()
export class RunClient extends AgentSideClient<RunService> {
  constructor(address?: string, deadlineMs?: number) {
    const requests = {
      putTeam: PutTeamRequest,
      getTeam: GetTeamRequest,
      listTeams: ListTeamsRequest,
      deleteTeam: DeleteTeamRequest,
      startRun: StartRunRequest,
      getRun: GetRunRequest,
      listRuns: ListRunsRequest,
      cancelRun: CancelRunRequest,
    };
    super(RunServiceService, requests, address, deadlineMs);
  }
}
