import type {
  CommandHandlerOptions,
  Decider,
  EventData,
  EventStore,
  HandledCommand,
  HandleOptions,
  LoadedState,
} from '@keel/core';
import { CommandHandler, foldRecorded } from '@keel/core';

/** A stream's state as this process last saw it, and the version its snapshot was at. */
interface CachedState<State> {
  state: State;
  version: number;
  snapshotVersion: number;
}

/** Streams whose state one agent process keeps (least recently used go first). */
const DEFAULT_CAPACITY = 2000;

/**
 * A command handler that remembers the state of the streams this process loaded or wrote, so a
 * load reads only the events after the remembered version (one point lookup when nothing is
 * newer) instead of the snapshot plus its tail. Like a snapshot it is a cache: every load still
 * reads the log after it, so another process's writes are seen, and the append's expected version
 * decides races as before. States are copied in and out, so no caller shares them.
 */
export class CachingCommandHandler<State, Command, Event extends EventData> extends CommandHandler<
  State,
  Command,
  Event
> {
  private readonly cache = new Map<string, CachedState<State>>();
  private readonly every: number | undefined;

  constructor(
    private readonly log: EventStore,
    private readonly rules: Decider<State, Command, Event>,
    options: CommandHandlerOptions = {},
    private readonly capacity = DEFAULT_CAPACITY,
  ) {
    super(log, rules, options);
    this.every = options.snapshot?.every;
  }

  override async load(tenantId: string, streamName: string): Promise<LoadedState<State>> {
    const key = cacheKey(tenantId, streamName);
    const cached = this.cache.get(key);
    if (!cached) {
      const loaded = await super.load(tenantId, streamName);
      const snapshotVersion = loaded.version - loaded.eventsFolded;
      this.remember(key, { state: loaded.state, version: loaded.version, snapshotVersion });
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
    // Told as "from a snapshot" at the snapshot's version, so snapshots are taken as often as without the cache.
    return {
      state,
      version,
      eventsFolded: version - cached.snapshotVersion,
      fromSnapshot: cached.snapshotVersion > 0,
    };
  }

  override async handle(
    tenantId: string,
    streamName: string,
    command: Command,
    options: HandleOptions = {},
  ): Promise<HandledCommand<State>> {
    const handled = await super.handle(tenantId, streamName, command, options);
    const key = cacheKey(tenantId, streamName);
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
    if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value!);
  }
}

const cacheKey = (tenantId: string, streamName: string): string => `${tenantId}\u0000${streamName}`;
