import type { ServerResponse } from 'node:http';
import type { EventBus, WatchingBus } from '@keel/core';
import { NotFoundError, streamName, ValidationError } from '@keel/core';
import { CONVERSATION_CATEGORY } from '@keel/events';
import type { Infrastructure, KeelLogger } from '@keel/runtime';
import { KEEL_INFRA, KEEL_LOGGER, KEEL_SERVICE_METRICS, readEnv } from '@keel/runtime';
import type { BeforeApplicationShutdown } from '@nestjs/common';
import { Inject, Injectable, Optional } from '@nestjs/common';
import type { FeedSettings, FrameSource } from './feed-connection.js';
import { FeedConnection } from './feed-connection.js';
import type { FeedSources, FeedTarget } from './feed-reader.js';
import { readFeed } from './feed-reader.js';

/** Nest token of the feed's tunables. */
export const FEED_SETTINGS = Symbol.for('keel.gateway.feed-settings');

/**
 * The feed's tunables, read through the env schema (checked and defaulted there):
 * `KEEL_SSE_HEARTBEAT_MS` (15 s), `KEEL_SSE_POLL_MS` (250 ms), `KEEL_SSE_WATCHED_POLL_MS` (5 s, with
 * the bus's watch), `KEEL_SSE_MAX_BUFFERED_BYTES` (1 MiB).
 */
export const feedSettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): FeedSettings => ({
  heartbeatMs: Number(readEnv('KEEL_SSE_HEARTBEAT_MS', env)),
  pollMs: Number(readEnv('KEEL_SSE_POLL_MS', env)),
  watchedPollMs: Number(readEnv('KEEL_SSE_WATCHED_POLL_MS', env)),
  maxBufferedBytes: Number(readEnv('KEEL_SSE_MAX_BUFFERED_BYTES', env)),
});

/**
 * Opens feeds and closes those still open when the gateway shuts down. The feed is one thing: a
 * conversation's frames over SSE (durable events, then ephemeral deltas), seen two ways: the
 * events feed (the conversation from a version on) and a turn feed (one turn; API.md's "turn stream").
 */
@Injectable()
export class EventsFeedService implements BeforeApplicationShutdown {
  private readonly open = new Set<FeedConnection>();

  constructor(
    @Inject(KEEL_INFRA) private readonly infra: Infrastructure,
    @Inject(FEED_SETTINGS) private readonly settings: FeedSettings,
    @Inject(KEEL_LOGGER) private readonly logger: KeelLogger,
    /** Counts the open feeds (the service's metrics). */
    @Optional()
    @Inject(KEEL_SERVICE_METRICS)
    private readonly metrics?: { sseOpened(): () => void },
  ) {}

  /**
   * The conversation's stream name, after checking it exists in the caller's tenant: another
   * tenant's conversation and an unknown one are the same 404.
   */
  async findConversation(tenantId: string, conversationId: string): Promise<string> {
    let stream: string;
    try {
      stream = streamName(CONVERSATION_CATEGORY, conversationId);
    } catch (error) {
      if (error instanceof ValidationError)
        throw new NotFoundError(`conversation ${conversationId} not found`);
      throw error;
    }
    const first = await this.infra.store.read(tenantId, stream, { fromVersion: 1, toVersion: 1 });
    // Deleted: its data key is destroyed (DELETE /v1/conversations/{id}), asked of the key store.
    if (first[0]?.type !== 'ConversationCreated' || (await this.infra.erasure.isErased(tenantId, stream)))
      throw new NotFoundError(`conversation ${conversationId} not found`);
    return stream;
  }

  /**
   * Where feeds read: this process's store and ephemeral channel, at the configured poll interval,
   * and the bus's watch when it tells anything (not with the fast path off: feeds then poll at
   * `pollMs`, not at the watched interval).
   */
  sources(): FeedSources {
    const bus: EventBus & WatchingBus = this.infra.bus;
    return {
      store: this.infra.store,
      ephemeral: bus.ephemeral,
      pollMs: this.settings.pollMs,
      ...(this.settings.watchedPollMs ? { watchedPollMs: this.settings.watchedPollMs } : {}),
      ...(bus.watch && bus.watching !== false ? { watch: bus.watch.bind(bus), ping: () => bus.ping() } : {}),
    };
  }

  /**
   * Has this process fetch the stream's data key now (best effort, never fails), so its events
   * arriving on a watch open at once; a no-op when conversations are not sealed.
   */
  holdKey(tenantId: string, stream: string): void {
    this.infra.erasure.holdKey?.(tenantId, stream).catch((error: unknown) => {
      this.logger.debug({ err: error, tenantId }, 'fetching a data key ahead failed');
    });
  }

  /** Streams the feed on `raw` until the client leaves or the gateway stops. */
  stream(raw: ServerResponse, headers: Record<string, string>, target: FeedTarget): Promise<void> {
    return this.serve(raw, headers, (signal) => readFeed(this.sources(), target, signal), {
      tenantId: target.tenantId,
      conversationId: target.conversationId,
    });
  }

  /**
   * Streams `source` as SSE on `raw` until it ends, the client leaves or the gateway stops;
   * `closed` (if given) is aborted then, whoever stopped it.
   */
  async serve(
    raw: ServerResponse,
    headers: Record<string, string>,
    source: FrameSource,
    logContext: Record<string, string>,
    closed?: AbortController,
  ): Promise<void> {
    const connection = new FeedConnection(source, this.settings, this.logger, logContext, closed);
    this.open.add(connection);
    const closedStream = this.metrics?.sseOpened();
    try {
      await connection.run(raw, headers);
    } finally {
      this.open.delete(connection);
      closedStream?.();
    }
  }

  /** Ends every open feed, so the HTTP server can close (clients resume from the log). */
  beforeApplicationShutdown(): void {
    for (const connection of this.open) connection.stop();
  }
}
