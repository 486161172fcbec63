import type { NatsConnection } from '@nats-io/nats-core';
import type { PlacedPage } from '../event-store/index.js';
import type { LogPort } from '../logging/index.js';
import type { RelayWakeups } from '../outbox/ports.js';
import { uuidv7 } from '../typing/index.js';

/**
 * The longest notice sent with the page's events (at most 768 KiB as UTF-8, under NATS's 1 MiB
 * default max_payload); a larger page is told without them, and read from the log.
 */
const MAX_NOTICE_CHARS = 256 * 1024;

/** A notice on the wire: who sent it (a process skips its own) and the page it placed. */
interface Notice {
  o: string;
  p?: PlacedPage;
}

/**
 * Relay wake-up notices on one core NATS subject (not stored: a notice nobody hears is lost, and
 * the relay's idle poll covers it). The subject must lie outside the JetStream stream's subjects.
 * A notice carries the page placed, with its events as stored (sealed where the log is sealed,
 * like the stream's messages) unless they are too large; an empty notice only wakes.
 */
export class NatsRelayWakeups implements RelayWakeups {
  private readonly origin = uuidv7();

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    private readonly logger: Pick<LogPort, 'warn' | 'error'>,
  ) {}

  notify(page?: PlacedPage): void {
    if (this.nc.isClosed() || this.nc.isDraining()) return;
    try {
      this.nc.publish(this.subject, this.encode(page));
    } catch (error) {
      this.logger.warn({ err: error, subject: this.subject }, 'relay wake-up not sent');
    }
  }

  listen(onWake: (page?: PlacedPage) => void): () => void {
    const sub = this.nc.subscribe(this.subject, {
      callback: (error, msg) => {
        if (error) {
          this.logger.warn({ err: error, subject: this.subject }, 'relay wake-up subscription error');
          return;
        }
        const notice = this.decode(msg.string());
        if (notice?.o !== this.origin) onWake(notice?.p);
      },
    });
    return () => {
      if (!sub.isClosed()) sub.unsubscribe();
    };
  }

  private encode(page: PlacedPage | undefined): string {
    const whole = JSON.stringify({ o: this.origin, ...(page ? { p: page } : {}) } satisfies Notice);
    if (!page?.events || whole.length <= MAX_NOTICE_CHARS) return whole;
    const { events: _events, ...bare } = page;
    return JSON.stringify({ o: this.origin, p: bare } satisfies Notice);
  }

  /** A notice, or undefined for an empty one (an older process's, which only wakes) or one not understood. */
  private decode(text: string): Notice | undefined {
    if (text.length === 0) return undefined;
    try {
      const notice = JSON.parse(text) as Notice;
      return typeof notice.o === 'string' ? notice : undefined;
    } catch {
      return undefined;
    }
  }
}
