import type {
  AppendResult,
  CommandHandlerOptions,
  Decider,
  EventData,
  EventStore,
  HandledCommand,
  HandleOptions,
  LoadedState,
  WatchedStreams,
} from '@keel/core';
import { CommandHandler, ConcurrencyError, foldRecorded } from '@keel/core';

/** A stream's state as this process last saw it, and the version its snapshot was at. */
interface CachedState<State> {
  state: State;
  version: number;
  snapshotVersion: number;
}

/** Streams whose state one agent process keeps (least recently used go first). */
const DEFAULT_CAPACITY = 2000;

/** What the handler asks of the process's `WatchedStreams` (infra.watched). */
export type StreamWatch = Pick<WatchedStreams, 'watch' | 'verified' | 'isCurrentAt'>;

/** Settings of a caching handler: those of every handler, and the watch that may vouch for its cache. */
export interface CachingCommandHandlerOptions extends CommandHandlerOptions {
  /**
   * With it, a `load` of a stream whose remembered state the bus vouches for (`isCurrentAt`: it
   * was watched before the last read, and no newer event has arrived since) reads nothing. The
   * price: a change made by another process is seen when its event arrives on the bus (a
   * millisecond or two after its commit; at most KEEL_WATCH_MAX_AGE_MS late if a publish is
   * lost), not by the very next load. Only for streams where that is acceptable (configuration).
   */
  watched?: StreamWatch;
  /**
   * With `watched`: a load served from memory more than this long after the stream's last read
   * starts a read in the background (default 2,000 ms, under KEEL_WATCH_MAX_AGE_MS's default
   * 5,000), so the watch keeps vouching and no load waits for the periodic read.
   */
  refreshAfterMs?: number;
}

/** See `CachingCommandHandlerOptions.refreshAfterMs`. */
const DEFAULT_REFRESH_AFTER_MS = 2_000;

/**
 * A command handler that remembers the state of the streams this process loaded or wrote, so a
 * load reads only the events after the remembered version (one point lookup when nothing is
 * newer) instead of the snapshot plus its tail. Like a snapshot it is a cache: every load still
 * reads the log after it, so another process's writes are seen, and the append's expected version
 * decides races as before. States are copied in and out, so no caller shares them. With
 * `watched`, a load the bus vouches for reads nothing at all; a command still never trusts it: a
 * command that is not appended on the remembered state at once is decided on a read of the log.
 */
export class CachingCommandHandler<State, Command, Event extends EventData> extends CommandHandler<
  State,
  Command,
  Event
> {
  private readonly cache = new Map<string, CachedState<State>>();
  private readonly every: number | undefined;
  private readonly snapshotOptions: CommandHandlerOptions['snapshot'];
  private readonly watched: StreamWatch | undefined;
  /** Streams a command is being decided on after a read (by key, how many): their loads read. */
  private readonly deciding = new Map<string, number>();
  private readonly refreshAfterMs: number;
  /** When each watched stream was last read (epoch ms), and the background reads under way. */
  private readonly readAt = new Map<string, number>();
  private readonly refreshing = new Set<string>();

  constructor(
    private readonly log: EventStore,
    private readonly rules: Decider<State, Command, Event>,
    options: CachingCommandHandlerOptions = {},
    private readonly capacity = DEFAULT_CAPACITY,
  ) {
    super(log, rules, options);
    this.every = options.snapshot?.every;
    this.snapshotOptions = options.snapshot;
    this.watched = options.watched;
    this.refreshAfterMs = options.refreshAfterMs ?? DEFAULT_REFRESH_AFTER_MS;
  }

  override async load(tenantId: string, streamName: string): Promise<LoadedState<State>> {
    const key = cacheKey(tenantId, streamName);
    const cached = this.cache.get(key);
    if (
      cached &&
      !this.deciding.has(key) &&
      this.watched?.isCurrentAt(tenantId, streamName, cached.version)
    ) {
      this.refreshAhead(tenantId, streamName, key);
      return { ...loadedAt(cached), state: structuredClone(cached.state) };
    }
    return this.readWatched(tenantId, streamName, key);
  }

  /** A read of the log that the watch vouches for afterwards: watched before the read starts. */
  private async readWatched(tenantId: string, streamName: string, key: string): Promise<LoadedState<State>> {
    const mark = await this.watched?.watch(tenantId, streamName);
    const loaded = await this.read(tenantId, streamName);
    if (!this.watched) return loaded;
    this.watched.verified(tenantId, streamName, loaded.version, mark);
    this.readAt.set(key, Date.now());
    return loaded;
  }

  /** Reads the stream in the background when its last read is `refreshAfterMs` old (one at a time). */
  private refreshAhead(tenantId: string, streamName: string, key: string): void {
    const readAt = this.readAt.get(key);
    if (readAt === undefined || Date.now() - readAt < this.refreshAfterMs || this.refreshing.has(key)) return;
    this.refreshing.add(key);
    // A failed read changes nothing: once the watch stops vouching, a load reads in its own time.
    void this.readWatched(tenantId, streamName, key)
      .catch(() => undefined)
      .finally(() => this.refreshing.delete(key));
  }

  /** The state after reading the log: the events after the remembered version, or snapshot and tail. */
  private async read(tenantId: string, streamName: string): Promise<LoadedState<State>> {
    const key = cacheKey(tenantId, streamName);
    const cached = this.cache.get(key);
    if (!cached) {
      const loaded = await super.load(tenantId, streamName);
      const snapshotVersion = loaded.version - loaded.eventsFolded;
      this.remember(key, { state: structuredClone(loaded.state), version: loaded.version, snapshotVersion });
      return loaded;
    }
    const events = await this.log.read(tenantId, streamName, { fromVersion: cached.version + 1 });
    const state = foldRecorded(this.rules, events, structuredClone(cached.state));
    const version = events.at(-1)?.version ?? cached.version;
    this.remember(
      key,
      events.length > 0
        ? { state: structuredClone(state), version, snapshotVersion: cached.snapshotVersion }
        : cached,
    );
    return { ...loadedAt({ version, snapshotVersion: cached.snapshotVersion }), state };
  }

  /**
   * The state this process remembers, a copy, when it is at exactly `version`; else undefined.
   * What another process appended since is not in it: use it only where a stale answer is caught
   * later (a command's expected version refuses it) and costs nothing but work.
   */
  rememberedAt(
    tenantId: string,
    streamName: string,
    version: number,
  ): { state: State; version: number } | undefined {
    const cached = this.cache.get(cacheKey(tenantId, streamName));
    return cached?.version === version ? { state: structuredClone(cached.state), version } : undefined;
  }

  /**
   * The state this process remembers, a copy, at whatever version it last saw (the log may have
   * moved on since); undefined when it remembers none. For a decision whose append at that
   * version is the check: an answer it alone would give must be confirmed on a fresh `load`.
   */
  remembered(tenantId: string, streamName: string): { state: State; version: number } | undefined {
    const cached = this.cache.get(cacheKey(tenantId, streamName));
    return cached && { state: structuredClone(cached.state), version: cached.version };
  }

  /**
   * Remembers a stream no one has written, as its initial state: for a name this process just
   * made up (a fresh uuidv7), so its first command appends with no read. Were the name taken
   * after all, that append is refused (no stream expected) and the command decided on a read.
   */
  rememberEmpty(tenantId: string, streamName: string): void {
    this.remember(cacheKey(tenantId, streamName), {
      state: this.rules.initialState(),
      version: 0,
      snapshotVersion: 0,
    });
  }

  /**
   * Handles a command. When this process remembers the stream, it decides on the remembered
   * state and appends at once, with no read: the append's expected version is the check (a
   * stream that moved meanwhile refuses it, and the command is handled again on a fresh load).
   * A command that decides nothing or is refused on the remembered state is not trusted to be
   * stale-free: it too is handled again on a fresh load.
   */
  override async handle(
    tenantId: string,
    streamName: string,
    command: Command,
    options: HandleOptions = {},
  ): Promise<HandledCommand<State>> {
    const cached = this.cache.get(cacheKey(tenantId, streamName));
    const fast = cached && (await this.appendOnRemembered(tenantId, streamName, cached, command, options));
    if (fast) return fast;
    return this.handleLoaded(tenantId, streamName, command, options);
  }

  /** The command decided on the remembered state and appended at its version; undefined when that cannot answer. */
  private async appendOnRemembered(
    tenantId: string,
    streamName: string,
    cached: CachedState<State>,
    command: Command,
    options: HandleOptions,
  ): Promise<HandledCommand<State> | undefined> {
    const before = structuredClone(cached.state);
    let decided: Event[];
    try {
      decided = this.rules.decide(command, before);
    } catch {
      return undefined;
    }
    if (decided.length === 0) return undefined;
    const withMetadata = decided.map((e) => ({ ...e, metadata: { ...options.metadata, ...e.metadata } }));
    let append: AppendResult;
    try {
      append = await this.log.append(tenantId, streamName, withMetadata, {
        // Version 0 is "no stream": said so, the store checks it without reading the stream's head.
        expectedVersion: cached.version === 0 ? 'no_stream' : cached.version,
        ...(options.commitId ? { commitId: options.commitId } : {}),
      });
    } catch (error) {
      if (error instanceof ConcurrencyError) return undefined;
      throw error;
    }
    // A commit written before (a retried command): the plain path answers it as it always has.
    if (append.idempotentReplay) return undefined;
    const state = foldRecorded(this.rules, append.events, before);
    const version = append.nextExpectedVersion;
    const snapshotVersion = await this.snapshotIfDue(tenantId, streamName, state, version, cached);
    this.remember(cacheKey(tenantId, streamName), {
      state: structuredClone(state),
      version,
      snapshotVersion,
    });
    return { state, version, events: append.events, append };
  }

  /** Saves a snapshot when `every` events have passed since the last one; the snapshot's version. */
  private async snapshotIfDue(
    tenantId: string,
    streamName: string,
    state: State,
    version: number,
    cached: CachedState<State>,
  ): Promise<number> {
    const snapshot = this.snapshotOptions;
    if (!snapshot || version - cached.snapshotVersion < snapshot.every) return cached.snapshotVersion;
    // A snapshot is a cache: failing to write one must not fail the command.
    await this.log.snapshots
      .save(tenantId, streamName, { name: snapshot.name, version, state })
      .catch(() => undefined);
    return version;
  }

  /** The plain path (load, decide, append, retry lost races), remembering the state it ends at. */
  private async handleLoaded(
    tenantId: string,
    streamName: string,
    command: Command,
    options: HandleOptions,
  ): Promise<HandledCommand<State>> {
    const key = cacheKey(tenantId, streamName);
    // Every load of this attempt and its retries reads the log, whatever the watch says: it is
    // here because the remembered state did not take the command, or the log moved past it.
    this.deciding.set(key, (this.deciding.get(key) ?? 0) + 1);
    let handled: HandledCommand<State>;
    try {
      handled = await super.handle(tenantId, streamName, command, options);
    } finally {
      const left = this.deciding.get(key)! - 1;
      if (left === 0) this.deciding.delete(key);
      else this.deciding.set(key, left);
    }
    const before = this.cache.get(key);
    if (handled.events.length > 0 && before) {
      // The state after this command's own events: the next load starts from it.
      const snapshotVersion =
        this.every !== undefined && handled.version - before.snapshotVersion >= this.every
          ? handled.version
          : before.snapshotVersion;
      this.remember(key, {
        state: structuredClone(handled.state),
        version: handled.version,
        snapshotVersion,
      });
    }
    return handled;
  }

  private remember(key: string, entry: CachedState<State>): void {
    const current = this.cache.get(key);
    if (current && current.version > entry.version) entry = current;
    this.cache.delete(key);
    this.cache.set(key, entry);
    if (this.cache.size > this.capacity) {
      const oldest = this.cache.keys().next().value!;
      this.cache.delete(oldest);
      this.readAt.delete(oldest);
    }
  }
}

/**
 * A load's account of a remembered state: told as "from a snapshot" at the snapshot's version, so
 * snapshots are taken as often as without the cache.
 */
const loadedAt = ({
  version,
  snapshotVersion,
}: Pick<CachedState<unknown>, 'version' | 'snapshotVersion'>): Omit<LoadedState<unknown>, 'state'> => ({
  version,
  eventsFolded: version - snapshotVersion,
  fromSnapshot: snapshotVersion > 0,
});

const cacheKey = (tenantId: string, streamName: string): string => `${tenantId}\u0000${streamName}`;
