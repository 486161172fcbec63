import { Injectable } from '@nestjs/common';
import {
  DeleteHookRequest,
  HookServiceService,
  ListHooksRequest,
  PutHookRequest,
} from '@keel/proto/keel/hooks/v1/hooks';
import { AgentSideClient } from '../agent-client/agent-side-client.js';

type HookService = typeof HookServiceService;

/** A typed client of keel.hooks.v1.HookService, served by the agent. */
@Injectable()
export class HooksClient extends AgentSideClient<HookService> {
  constructor(address?: string, deadlineMs?: number) {
    const requests = { putHook: PutHookRequest, listHooks: ListHooksRequest, deleteHook: DeleteHookRequest };
    super(HookServiceService, requests, address, deadlineMs);
  }
}
