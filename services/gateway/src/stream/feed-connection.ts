import type { ServerResponse } from 'node:http';
import type { EphemeralSubscription, EventStore, RecordedEvent } from '@keel/core';
import type { EphemeralChannel } from '@keel/core';
import type { KeelLogger } from '@keel/runtime';
import type { FeedFrame } from './feed-frames.js';
import { durableFrame, ephemeralFrame, renderFrame } from './feed-frames.js';

/** Tunables of the events feed (tests shorten them). */
export interface FeedSettings {
  /** Comment frames (`: ping`) this often keep proxies from closing an idle stream. */
  heartbeatMs: number;
  /** Longest wait between two reads of the log when nothing woke the feed earlier. */
  pollMs: number;
  /** Deltas are dropped for a client whose socket buffer holds more than this (never durable events). */
  maxBufferedBytes: number;
}

/** What one open feed reads from and writes to. */
export interface FeedTarget {
  tenantId: string;
  conversationId: string;
  streamName: string;
  /** Last version the client has: the feed sends what follows. */
  after: number;
}

/**
 * One open events feed: the conversation's durable events from the log after `after`, then live
 * ones, merged with its ephemeral deltas.
 *
 * No gap, no duplicate: the log is the only source of durable events. The feed remembers the last
 * version it sent and reads strictly after it, one read at a time, so a version is sent at most
 * once and none is skipped (per-stream versions are dense). Latency: a read runs at once when the
 * conversation's deltas arrive (a turn is running), when this process appends (the dev mode's
 * in-process agent), and otherwise every `pollMs`.
 *
 * The delta subscription is opened before the first read, and deltas wait in a queue until the
 * reads before them are written, so a delta never precedes the durable events already in the log
 * when it arrived. A slow client loses deltas, never durable events (it can resume from the log).
 * Closing the connection stops everything; it never touches the turn.
 */
export class FeedConnection {
  private lastVersion: number;
  private lastSeq = 0;
  private readonly queued: unknown[] = [];
  private readonly closed = new AbortController();
  private wake = new AbortController();
  private subscription: EphemeralSubscription | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private droppedDeltas = 0;

  constructor(
    private readonly target: FeedTarget,
    private readonly store: EventStore,
    private readonly ephemeral: EphemeralChannel,
    private readonly settings: FeedSettings,
    private readonly logger: KeelLogger,
  ) {
    this.lastVersion = target.after;
  }

  /** Writes the SSE head, subscribes, and streams until the client goes away. */
  async run(raw: ServerResponse, headers: Record<string, string>): Promise<void> {
    const { tenantId, conversationId } = this.target;
    raw.on('close', () => this.stop());
    raw.on('error', () => this.stop());
    // The client may have left while the conversation was looked up: its 'close' is then past.
    if (raw.destroyed || !raw.socket || raw.socket.destroyed) {
      this.stop();
      return;
    }
    // Subscribed before the first read: nothing published from here on is missed.
    this.subscription = this.ephemeral.subscribe({ kind: 'deltas', tenantId, conversationId }, (message) => {
      this.queued.push(message.data);
      this.wake.abort();
    });
    raw.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.flushHeaders();
    this.heartbeat = setInterval(() => {
      if (!this.closed.signal.aborted) raw.write(': ping\n\n');
    }, this.settings.heartbeatMs);
    this.heartbeat.unref();
    try {
      while (!this.closed.signal.aborted) {
        this.wake = new AbortController();
        const since = this.store.appendCount;
        this.writeDurable(
          raw,
          await this.store.read(tenantId, this.target.streamName, { fromVersion: this.lastVersion + 1 }),
        );
        this.writeDeltas(raw);
        if (this.queued.length > 0 || this.closed.signal.aborted) continue;
        await this.store.waitForAppend(
          this.settings.pollMs,
          AbortSignal.any([this.wake.signal, this.closed.signal]),
          since,
        );
      }
    } catch (error) {
      if (!this.closed.signal.aborted) {
        this.logger.warn({ tenantId, conversationId, err: error }, 'events feed failed: closing it');
      }
    } finally {
      this.stop();
      if (!raw.writableEnded) raw.end();
      if (this.droppedDeltas > 0) {
        this.logger.debug(
          { tenantId, conversationId, dropped: this.droppedDeltas },
          'deltas dropped for a slow client',
        );
      }
    }
  }

  /** Stops the subscription, the heartbeat and the read loop. Idempotent. */
  stop(): void {
    this.closed.abort();
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    clearInterval(this.heartbeat);
  }

  private writeDurable(raw: ServerResponse, events: RecordedEvent[]): void {
    for (const event of events) {
      // Read strictly after lastVersion, so this only guards against a store answering out of range.
      if (event.version <= this.lastVersion) continue;
      this.lastVersion = event.version;
      const frame = durableFrame(event);
      if (frame) this.write(raw, frame);
    }
  }

  private writeDeltas(raw: ServerResponse): void {
    for (const message of this.queued.splice(0)) {
      const mapped = ephemeralFrame(message, this.lastVersion, this.lastSeq);
      if (!mapped) continue;
      this.lastSeq = mapped.seq;
      if (raw.writableLength > this.settings.maxBufferedBytes) {
        this.droppedDeltas++;
        continue;
      }
      this.write(raw, mapped.frame);
    }
  }

  private write(raw: ServerResponse, frame: FeedFrame): void {
    if (!this.closed.signal.aborted && !raw.writableEnded) raw.write(renderFrame(frame));
  }
}
