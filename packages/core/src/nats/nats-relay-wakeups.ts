import type { NatsConnection } from '@nats-io/nats-core';
import type { LogPort } from '../logging/index.js';
import type { RelayWakeups } from '../outbox/ports.js';

/**
 * Relay wake-up notices on one core NATS subject (not stored: a notice nobody hears is lost, and
 * the relay's idle poll covers it). The subject must lie outside the JetStream stream's subjects.
 */
export class NatsRelayWakeups implements RelayWakeups {
  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    private readonly logger: Pick<LogPort, 'warn' | 'error'>,
  ) {}

  notify(): void {
    if (this.nc.isClosed() || this.nc.isDraining()) return;
    try {
      this.nc.publish(this.subject);
    } catch (error) {
      this.logger.warn({ err: error, subject: this.subject }, 'relay wake-up not sent');
    }
  }

  listen(onWake: () => void): () => void {
    const sub = this.nc.subscribe(this.subject, {
      callback: (error) => {
        if (error)
          this.logger.warn({ err: error, subject: this.subject }, 'relay wake-up subscription error');
        else onWake();
      },
    });
    return () => {
      if (!sub.isClosed()) sub.unsubscribe();
    };
  }
}
