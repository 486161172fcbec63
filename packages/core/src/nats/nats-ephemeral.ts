import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type {
  EphemeralChannel,
  EphemeralMessage,
  EphemeralScope,
  EphemeralSubscription,
  EphemeralTopic,
} from '../bus/ephemeral.js';
import { checkEphemeralTopic } from '../bus/ephemeral.js';
import type { LogPort } from '../logging/index.js';
import { decodeSubjectToken, encodeSubjectToken } from './subjects.js';

/**
 * Ephemeral messages on core NATS: `<prefix>.<kind>.<tenant>.<encoded conversation id>`. The
 * prefix must lie outside the JetStream stream's subjects, or JetStream would store them.
 */
export class NatsEphemeralChannel implements EphemeralChannel {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly logger: Pick<LogPort, 'warn' | 'error'>,
  ) {}

  publish(topic: EphemeralTopic, data: unknown): void {
    checkEphemeralTopic(topic);
    const subject = `${this.prefix}.${topic.kind}.${topic.tenantId}.${encodeSubjectToken(topic.conversationId)}`;
    this.nc.publish(subject, JSON.stringify(data));
  }

  subscribe(scope: EphemeralScope, handler: (message: EphemeralMessage) => void): EphemeralSubscription {
    checkEphemeralTopic(scope);
    const conversation = scope.conversationId === undefined ? '*' : encodeSubjectToken(scope.conversationId);
    const subject = `${this.prefix}.${scope.kind}.${scope.tenantId ?? '*'}.${conversation}`;
    const sub: Subscription = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) {
          this.logger.warn({ err: error, subject }, 'ephemeral subscription error');
          return;
        }
        const tokens = msg.subject.split('.');
        const conversationToken = tokens.at(-1)!;
        const tenantId = tokens.at(-2)!;
        try {
          handler({
            topic: { kind: scope.kind, tenantId, conversationId: decodeSubjectToken(conversationToken) },
            data: msg.json(),
          });
        } catch (handlerError) {
          this.logger.warn({ err: handlerError, subject: msg.subject }, 'ephemeral handler failed');
        }
      },
    });
    return { unsubscribe: () => sub.unsubscribe() };
  }
}
