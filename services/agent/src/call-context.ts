import type { ActorRole } from '@keel/events';

/** Who is acting and on whose behalf, as the gateway resolved it from the key and headers. */
export interface CallContext {
  tenantId: string;
  keyId: string;
  role: ActorRole;
  /** The acting end user (`X-Keel-User`), or the key's own id. */
  userId: string;
  correlationId: string;
}

/** The metadata every event caused by a call carries (audit, per-user usage, tracing). */
export const eventMetadata = (ctx: CallContext) => ({
  correlationId: ctx.correlationId,
  actor: { keyId: ctx.keyId, role: ctx.role, userId: ctx.userId },
});
