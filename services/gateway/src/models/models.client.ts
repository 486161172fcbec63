import { Injectable } from '@nestjs/common';
import {
  GetDefaultsRequest,
  GetModelAccessRequest,
  ModelsServiceService,
  PutDefaultsRequest,
} from '@keel/proto/keel/models/v1/models';
import { AgentSideClient } from '../agent-client/agent-side-client.js';

type ModelsService = typeof ModelsServiceService;

/** A typed client of keel.models.v1.ModelsService, served by the agent. */
@Injectable()
export class ModelsClient extends AgentSideClient<ModelsService> {
  constructor(address?: string, deadlineMs?: number) {
    const requests = {
      getModelAccess: GetModelAccessRequest,
      putDefaults: PutDefaultsRequest,
      getDefaults: GetDefaultsRequest,
    };
    super(ModelsServiceService, requests, address, deadlineMs);
  }
}
