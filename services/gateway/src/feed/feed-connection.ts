import type { ServerResponse } from 'node:http';
import type { KeelLogger } from '@keel/runtime';
import type { FeedFrame } from './feed-frames.js';
import { renderFrame } from './feed-frames.js';
import { isEphemeralFrame } from './feed-reader.js';

/** Tunables of the feeds (tests shorten them). */
export interface FeedSettings {
  /** Comment frames (`: ping`) this often keep proxies from closing an idle stream. */
  heartbeatMs: number;
  /** Longest wait between two reads of the log when nothing woke the feed earlier. */
  pollMs: number;
  /** The same when the bus shows every commit (its watch): the safety net for a lost notice. */
  watchedPollMs?: number;
  /** Deltas are dropped for a client whose socket buffer holds more than this (never durable events). */
  maxBufferedBytes: number;
}

/** The frames one SSE response writes, read until `signal` aborts (the client left, the gateway stops). */
export type FrameSource = (signal: AbortSignal) => AsyncIterable<FeedFrame>;

/**
 * One open SSE response (the events feed, a turn feed): writes the SSE head, then every frame
 * of its source, with `: ping` heartbeats, until the source ends (a turn's terminal event) or the
 * client goes away. A slow client loses deltas, never durable events (it can resume from the
 * log). Closing the connection stops the reading only; it never touches the turn.
 */
export class FeedConnection {
  private heartbeat: NodeJS.Timeout | undefined;
  private droppedDeltas = 0;

  constructor(
    private readonly source: FrameSource,
    private readonly settings: FeedSettings,
    private readonly logger: KeelLogger,
    /** What the logs name the stream by (tenant, conversation). */
    private readonly logContext: Record<string, string>,
    /** Aborted when the stream stops, whoever stops it; callers may pass theirs to share it. */
    private readonly closed: AbortController = new AbortController(),
  ) {}

  /** Writes the SSE head and streams until the source ends or the client goes away. */
  async run(raw: ServerResponse, headers: Record<string, string>): Promise<void> {
    raw.on('close', () => this.stop());
    raw.on('error', () => this.stop());
    // The client may have left while the conversation was looked up: its 'close' is then past.
    if (raw.destroyed || !raw.socket || raw.socket.destroyed) {
      this.stop();
      return;
    }
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
      for await (const frame of this.source(this.closed.signal)) {
        if (this.closed.signal.aborted || raw.writableEnded) break;
        if (isEphemeralFrame(frame) && raw.writableLength > this.settings.maxBufferedBytes) {
          this.droppedDeltas++;
          continue;
        }
        raw.write(renderFrame(frame));
      }
    } catch (error) {
      if (!this.closed.signal.aborted) {
        this.logger.warn({ ...this.logContext, err: error }, 'SSE stream failed: closing it');
      }
    } finally {
      this.stop();
      if (!raw.writableEnded) raw.end();
      if (this.droppedDeltas > 0) {
        this.logger.debug(
          { ...this.logContext, dropped: this.droppedDeltas },
          'deltas dropped for a slow client',
        );
      }
    }
  }

  /** Stops the heartbeat and the reading. Idempotent. */
  stop(): void {
    this.closed.abort();
    clearInterval(this.heartbeat);
  }
}
