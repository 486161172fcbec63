import { ConcurrencyError } from '../errors/index.js';
import type { AppendResult, EventStore } from '../event-store/index.js';
import type { EventData, EventMetadata, RecordedEvent } from '../typing/index.js';
import type { Decider } from './decider.js';
import { foldRecorded } from './decider.js';
import { sleep } from '../time/index.js';

/** Settings of a command handler. */
export interface CommandHandlerOptions {
  /** Snapshot the state every `every` events under `name` (bump the name when the state shape changes). */
  snapshot?: { name: string; every: number };
  /** How many times a lost optimistic-concurrency race is retried (reload, decide, append). Default 3. */
  maxRetries?: number;
  /**
   * The pause before retry `attempt` (1, 2, …) of a lost race, in milliseconds. Default: a random
   * wait up to 2^attempt ms (at most 64), so writers that keep colliding spread out instead of
   * racing again at once.
   */
  retryDelayMs?: (attempt: number) => number;
}

const jitteredDelayMs = (attempt: number): number => Math.random() * Math.min(64, 2 ** attempt);

/** What a stream's state is, rebuilt from snapshot + newer events. */
export interface LoadedState<State> {
  state: State;
  version: number;
  /** How many events were folded after the snapshot (or from the start). */
  eventsFolded: number;
  fromSnapshot: boolean;
}

/** The outcome of a handled command. */
export interface HandledCommand<State> {
  state: State;
  version: number;
  events: RecordedEvent[];
  /** Empty when the decider produced no events (nothing was appended). */
  append?: AppendResult;
}

/** Options of one command. */
export interface HandleOptions {
  metadata?: EventMetadata;
  /** Makes the append idempotent: a retry of the same command with the same commit id writes once. */
  commitId?: string;
}

/**
 * Loads an aggregate (snapshot + newer events), decides, appends with the expected version, and
 * retries a bounded number of times when another writer got there first.
 */
export class CommandHandler<State, Command, Event extends EventData> {
  private readonly maxRetries: number;
  private readonly retryDelayMs: (attempt: number) => number;

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<State, Command, Event>,
    private readonly options: CommandHandlerOptions = {},
  ) {
    this.maxRetries = options.maxRetries ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? jitteredDelayMs;
  }

  /** Rebuilds a stream's state from the log, starting at the latest snapshot when there is one. */
  async load(tenantId: string, streamName: string): Promise<LoadedState<State>> {
    const snapshotName = this.options.snapshot?.name;
    const snapshot = snapshotName
      ? await this.store.snapshots.load<State>(tenantId, streamName, snapshotName)
      : undefined;
    const from = snapshot ? snapshot.version + 1 : 1;
    const events = await this.store.read(tenantId, streamName, { fromVersion: from });
    const state = foldRecorded(this.decider, events, snapshot ? snapshot.state : this.decider.initialState());
    const version = events.length > 0 ? events[events.length - 1]!.version : (snapshot?.version ?? 0);
    return { state, version, eventsFolded: events.length, fromSnapshot: snapshot !== undefined };
  }

  /** Handles one command against the stream, retrying lost races. */
  async handle(
    tenantId: string,
    streamName: string,
    command: Command,
    options: HandleOptions = {},
  ): Promise<HandledCommand<State>> {
    for (let attempt = 0; ; attempt++) {
      const loaded = await this.load(tenantId, streamName);
      const decided = this.decider.decide(command, loaded.state);
      if (decided.length === 0) return { state: loaded.state, version: loaded.version, events: [] };
      const withMetadata = decided.map((e) => ({ ...e, metadata: { ...options.metadata, ...e.metadata } }));
      try {
        const append = await this.store.append(tenantId, streamName, withMetadata, {
          expectedVersion: loaded.version,
          ...(options.commitId ? { commitId: options.commitId } : {}),
        });
        const state = foldRecorded(this.decider, append.events, loaded.state);
        await this.maybeSnapshot(tenantId, streamName, state, append.nextExpectedVersion, loaded);
        return { state, version: append.nextExpectedVersion, events: append.events, append };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= this.maxRetries) throw error;
      }
      const delay = this.retryDelayMs(attempt + 1);
      if (delay > 0) await sleep(delay);
    }
  }

  private async maybeSnapshot(
    tenantId: string,
    streamName: string,
    state: State,
    version: number,
    loaded: LoadedState<State>,
  ): Promise<void> {
    const snapshot = this.options.snapshot;
    if (!snapshot) return;
    const snapshotVersion = loaded.version - (loaded.fromSnapshot ? loaded.eventsFolded : loaded.version);
    if (version - snapshotVersion < snapshot.every) return;
    // A snapshot is a cache: failing to write one must not fail the command.
    await this.store.snapshots
      .save(tenantId, streamName, { name: snapshot.name, version, state })
      .catch(() => undefined);
  }
}
