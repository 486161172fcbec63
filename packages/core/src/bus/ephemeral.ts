import { ValidationError } from '../errors/index.js';
import { assertTenantId } from '../typing/index.js';

/**
 * Kinds of ephemeral messages: token deltas of a turn, cancel signals, and `erased`: a stream's
 * data key was destroyed (the topic's `conversationId` is then the stream's name; see DataKeyring).
 */
export type EphemeralKind = 'deltas' | 'cancel' | 'erased';

/** Where an ephemeral message goes: a kind, a tenant, a conversation. */
export interface EphemeralTopic {
  kind: EphemeralKind;
  tenantId: string;
  conversationId: string;
}

/** A subscription's scope: a kind, and optionally one tenant or one conversation of it. */
export interface EphemeralScope {
  kind: EphemeralKind;
  tenantId?: string;
  conversationId?: string;
}

/** One ephemeral message as a subscriber gets it. */
export interface EphemeralMessage {
  topic: EphemeralTopic;
  data: unknown;
}

/** A live subscription. */
export interface EphemeralSubscription {
  unsubscribe(): void;
}

/**
 * Fire-and-forget messages that are not events: nothing stores them, a subscriber that is not
 * listening misses them, and a publish never waits. Token deltas and cancel signals travel here
 * (core NATS subjects, outside the JetStream stream), so the durable log holds only what must last.
 */
export interface EphemeralChannel {
  publish(topic: EphemeralTopic, data: unknown): void;
  subscribe(scope: EphemeralScope, handler: (message: EphemeralMessage) => void): EphemeralSubscription;
}

/** Validates a topic (tenant alphabet, non-empty conversation id of bounded length). */
export const checkEphemeralTopic = (topic: EphemeralScope): void => {
  if (topic.kind !== 'deltas' && topic.kind !== 'cancel' && topic.kind !== 'erased') {
    throw new ValidationError(`unknown ephemeral kind ${String(topic.kind)}`, { field: 'kind' });
  }
  if (topic.tenantId !== undefined) assertTenantId(topic.tenantId);
  if (
    topic.conversationId !== undefined &&
    (topic.conversationId.length === 0 || topic.conversationId.length > 200)
  ) {
    throw new ValidationError('invalid conversation id', { field: 'conversationId' });
  }
  if (topic.conversationId !== undefined && topic.tenantId === undefined) {
    throw new ValidationError('a conversation scope needs its tenant', { field: 'tenantId' });
  }
};

const matches = (scope: EphemeralScope, topic: EphemeralTopic): boolean =>
  scope.kind === topic.kind &&
  (scope.tenantId === undefined || scope.tenantId === topic.tenantId) &&
  (scope.conversationId === undefined || scope.conversationId === topic.conversationId);

/** The in-process channel of the dev mode: synchronous fan-out to matching subscribers. */
export class InMemoryEphemeralChannel implements EphemeralChannel {
  private readonly subscribers = new Set<{ scope: EphemeralScope; handler: (m: EphemeralMessage) => void }>();

  publish(topic: EphemeralTopic, data: unknown): void {
    checkEphemeralTopic(topic);
    // A copy per delivery, as a network would give: subscribers never share objects with the publisher.
    for (const s of [...this.subscribers]) {
      if (!matches(s.scope, topic)) continue;
      try {
        s.handler({ topic: { ...topic }, data: structuredClone(data) });
      } catch {
        // A subscriber's failure is its own; ephemeral delivery goes on.
      }
    }
  }

  subscribe(scope: EphemeralScope, handler: (message: EphemeralMessage) => void): EphemeralSubscription {
    checkEphemeralTopic(scope);
    const entry = { scope: { ...scope }, handler };
    this.subscribers.add(entry);
    return { unsubscribe: () => void this.subscribers.delete(entry) };
  }
}
