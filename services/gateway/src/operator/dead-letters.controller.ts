import type { DeadLetter } from '@keel/core';
import { ConflictError, PreconditionError } from '@keel/core';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import type { Principal } from '../auth/principal.js';
import { Caller } from '../auth/principal.js';
import { Roles } from '../auth/roles.decorator.js';
import { fail } from '../config/request-fields.js';

/** A row of `GET /v1/dead-letters` (the event's payload is never shown). */
export interface DeadLetterView {
  id: string;
  consumer: string;
  tenantId: string;
  eventType: string;
  error: string;
  attempts: number;
  failedAt: string;
}

const MAX_LIMIT = 1000;

const single = (value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') return fail(field, `${field} must be given once, not empty`);
  return value;
};

const viewOf = (letter: DeadLetter): DeadLetterView => ({
  id: letter.id,
  consumer: letter.consumer,
  tenantId: letter.tenantId,
  eventType: letter.event.type,
  error: letter.error,
  attempts: letter.deliveryCount,
  failedAt: letter.deadAt,
});

/**
 * API.md "Operator console": dead letters, the events a consumer failed `maxDeliver` times, from
 * the bus's dead-letter store (the same the `dead-letters` CLI reads). `GET` lists those not
 * replayed yet, oldest first: the operator every tenant's (`?tenantId=`, `?consumer=` narrow), a
 * tenant admin its own. `POST …/{id}/replay` (operator) redelivers the event to its consumer
 * only → 202; unknown id 404, already replayed 409.
 */
@Controller('v1/dead-letters')
export class DeadLettersController {
  constructor(@Inject(KEEL_INFRA) private readonly infra: Infrastructure) {}

  @Get()
  @Roles('admin', 'operator')
  async list(
    @Query() query: Record<string, unknown>,
    @Caller() caller: Principal,
  ): Promise<{ data: DeadLetterView[] }> {
    const consumer = single(query.consumer, 'consumer');
    const named = single(query.tenantId, 'tenantId');
    const limitText = single(query.limit, 'limit') ?? '100';
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_LIMIT)
      return fail('limit', `limit must be an integer from 1 to ${MAX_LIMIT}`);
    if (caller.kind === 'tenant' && named !== undefined && named !== caller.tenantId)
      return fail('tenantId', 'tenantId is for the operator key: a tenant key reads its own tenant');
    const tenantId = caller.kind === 'tenant' ? caller.tenantId : named;
    const letters = await this.infra.bus.deadLetters.list({
      ...(consumer !== undefined ? { consumer } : {}),
      ...(tenantId !== undefined ? { tenantId } : {}),
      limit,
    });
    return { data: letters.map(viewOf) };
  }

  @Post(':id/replay')
  @Roles('operator')
  @HttpCode(202)
  async replay(@Param('id') id: string): Promise<{ id: string; replay: 'accepted' }> {
    try {
      await this.infra.bus.replayDeadLetter(id);
    } catch (error) {
      // Replayed already: the request conflicts with the letter's state (the CLI says the same).
      if (error instanceof PreconditionError) throw new ConflictError(error.message, { cause: error });
      throw error;
    }
    return { id, replay: 'accepted' };
  }
}
