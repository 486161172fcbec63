import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Inject, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { from, lastValueFrom, map } from 'rxjs';
import { ConflictError } from '@keel/core';
import type { AuthenticatedRequest } from '../auth/principal.js';
import { IDEMPOTENT_REPLAY_HEADER } from './idempotency-key.js';
import type { IdempotentRequest } from './idempotency.service.js';
import { IdempotencyService } from './idempotency.service.js';

const OWN_IDEMPOTENCY = 'keel:own-idempotency';

/** Marks a POST route that applies Idempotency-Key itself (the streaming send). */
export const OwnIdempotency = (): MethodDecorator => SetMetadata(OWN_IDEMPOTENCY, true);

const KEY_FORWARDED = 'keel:idempotency-key-forwarded';

/**
 * Marks a POST route that passes its Idempotency-Key on to the service doing the work, which
 * answers a retry with the first outcome from its log (IdempotencyTarget.deduplicated): a failed
 * or unknown outcome frees the key, and a retry while the first is pending goes through.
 */
export const ForwardsIdempotencyKey = (): MethodDecorator => SetMetadata(KEY_FORWARDED, true);

/** What is kept of a response for its retries. */
interface RecordedResponse {
  body: unknown;
  /** The response held a secret shown once: not kept, so a retry cannot be answered with it. */
  secretShownOnce?: boolean;
}

const holdsSecret = (body: unknown): boolean =>
  typeof body === 'object' && body !== null && ('key' in body || 'secret' in body);

/** What is kept of a handler's result: the body, unless it holds a secret shown once. */
const recordOf = (body: unknown): RecordedResponse =>
  holdsSecret(body) ? { body: null, secretShownOnce: true } : { body: body ?? null };

const secretNotKept = (): ConflictError =>
  new ConflictError(
    'Idempotency-Key: the first request with this key succeeded; its response held a secret that is shown once and not kept',
    { details: { field: 'Idempotency-Key' } },
  );

/** The part of Fastify's reply the interceptor sets a header on. */
interface ReplyWithHeader {
  header(name: string, value: string): unknown;
}

/**
 * Applies `Idempotency-Key` to every authenticated POST route (see IdempotencyService): the
 * handler's result is recorded as the response to repeat; a retry gets it back, marked with
 * `Idempotent-Replayed: true`, with the route's status, and the handler does not run.
 *
 * A response that carries a secret shown once (an issued API key, a webhook secret: a `key` or
 * `secret` field) is not stored: its retry does not do the work again either, but is answered 409
 * (the secret cannot be shown twice; revoke it and issue another).
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    @Inject(IdempotencyService) private readonly idempotency: IdempotencyService,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const request = context.switchToHttp().getRequest<AuthenticatedRequest & IdempotentRequest>();
    if (request.method !== 'POST' || !request.principal) return next.handle();
    if (this.reflector.get<boolean>(OWN_IDEMPOTENCY, context.getHandler())) return next.handle();
    const target = {
      ...this.idempotency.targetOf(request.principal, request),
      deduplicated: this.reflector.get<boolean>(KEY_FORWARDED, context.getHandler()) ?? false,
    };
    const run = () => lastValueFrom(next.handle(), { defaultValue: undefined });
    return from(this.idempotency.once<unknown, RecordedResponse>(target, run, recordOf)).pipe(
      map((outcome) => {
        if (!outcome.replayed) return outcome.result;
        if (outcome.recorded.secretShownOnce) throw secretNotKept();
        context.switchToHttp().getResponse<ReplyWithHeader>().header(IDEMPOTENT_REPLAY_HEADER, 'true');
        return outcome.recorded.body;
      }),
    );
  }
}
