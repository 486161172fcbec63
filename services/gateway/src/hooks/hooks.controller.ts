import type { DeadLetter } from '@keel/core';
import { NotFoundError, parseStreamName } from '@keel/core';
import { DURABLE_EVENT_NAMES } from '@keel/events';
import type { Hook } from '@keel/proto/keel/hooks/v1/hooks';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Put } from '@nestjs/common';
import { answered, callContextOf } from '../agent-client/agent.client.js';
import type { Principal } from '../auth/principal.js';
import { Caller, RequestId } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail, objectWith, optionalString, requiredString } from '../config/request-fields.js';
import { HooksClient } from './hooks.client.js';

/** A hook as the API shows it. */
export interface HookView {
  name: string;
  url: string;
  events: string[];
  agentId?: string;
}

/** A row of `GET /v1/hooks/{name}/failures`: a delivery dead-lettered after its last attempt. */
export interface HookFailureView {
  id: string;
  eventId: string;
  event: string;
  conversationId: string;
  error: string;
  attempts: number;
  failedAt: string;
}

/**
 * The dead-letter consumer of hook deliveries; the event's metadata names the hook (the tools
 * service records them so: services/tools/src/hooks/hook-policy.ts).
 */
export const HOOK_DEAD_LETTER_CONSUMER = 'hooks';

/** Most failures listed (the oldest first). */
const MAX_FAILURES = 1000;

const MAX_EVENTS = 50;

/** Checks `PUT /v1/hooks/{name}`'s body (shape and types; the agent checks names, URL and egress). */
export const parsePutHook = (name: string, body: unknown): Hook => {
  const object = objectWith(body, ['url', 'events', 'agentId']);
  const url = requiredString(object.url, 'url', 2_048);
  const events = object.events;
  if (!Array.isArray(events) || events.length > MAX_EVENTS || events.some((e) => typeof e !== 'string')) {
    return fail('events', `events must be a list of at most ${MAX_EVENTS} event names`);
  }
  const agentId = optionalString(object.agentId, 'agentId', 64);
  return { name, url, events: events as string[], ...(agentId === undefined ? {} : { agentId }) };
};

const hookView = (hook: Hook): HookView => ({
  name: hook.name,
  url: hook.url,
  events: hook.events,
  ...(hook.agentId === undefined ? {} : { agentId: hook.agentId }),
});

const failureView = (letter: DeadLetter): HookFailureView => ({
  id: letter.id,
  eventId: letter.event.eventId,
  event: DURABLE_EVENT_NAMES[letter.event.type] ?? letter.event.type,
  conversationId: parseStreamName(letter.event.streamName).id,
  error: letter.error,
  attempts: letter.deliveryCount,
  failedAt: letter.deadAt,
});

/** `/v1/hooks` (API.md "Tool sources and policies", Hooks), admin only. */
@Controller('v1/hooks')
@Roles('admin')
export class HooksController {
  constructor(
    @Inject(HooksClient) private readonly hooks: HooksClient,
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
  ) {}

  /** `PUT /v1/hooks/{name}` → 200 the stored hook; an unknown event or a refused URL: 400 naming it. */
  @Put(':name')
  async put(
    @Param('name') name: string,
    @Body() body: unknown,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<HookView> {
    const hook = parsePutHook(name, body);
    const response = await this.hooks.call('putHook', callContextOf(caller, requestId), { hook });
    return hookView(answered(response.hook, 'hook'));
  }

  /** `GET /v1/hooks` → the tenant's hooks ordered by name. */
  @Get()
  async list(@Caller() caller: Principal, @RequestId() requestId: string): Promise<{ data: HookView[] }> {
    const response = await this.hooks.call('listHooks', callContextOf(caller, requestId));
    return { data: response.data.map(hookView) };
  }

  /** `GET /v1/hooks/{name}/failures` → the hook's dead-lettered deliveries not replayed yet, oldest first. */
  @Get(':name/failures')
  async failures(
    @Param('name') name: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<{ data: HookFailureView[] }> {
    const context = callContextOf(caller, requestId);
    const { data } = await this.hooks.call('listHooks', context);
    if (!data.some((hook) => hook.name === name)) throw new NotFoundError(`there is no hook named ${name}`);
    const letters = await this.infra.bus.deadLetters.list({
      consumer: HOOK_DEAD_LETTER_CONSUMER,
      tenantId: context.tenantId,
      limit: MAX_FAILURES,
    });
    return { data: letters.filter((letter) => letter.event.metadata.hook === name).map(failureView) };
  }

  /** `DELETE /v1/hooks/{name}` → 204; unknown: 404. */
  @Delete(':name')
  @HttpCode(204)
  async delete(
    @Param('name') name: string,
    @Caller() caller: Principal,
    @RequestId() requestId: string,
  ): Promise<void> {
    await this.hooks.call('deleteHook', callContextOf(caller, requestId), { name });
  }
}
