import { MongoClient } from 'mongodb';

/** Round trips of one command name: how many, and the time the driver saw them take. */
export interface CommandStats {
  count: number;
  totalMs: number;
}

/**
 * A MongoDB client that records every command it sends (name and collection, driver-side
 * duration), so a benchmark can say how many round trips an operation costs and where its time
 * goes. Used only for the breakdown runs: the measured runs use an unmonitored client.
 */
export class CommandMonitor {
  readonly client: MongoClient;
  private stats = new Map<string, CommandStats>();
  private readonly started = new Map<number, string>();

  constructor(url: string) {
    this.client = new MongoClient(url, { monitorCommands: true, serverSelectionTimeoutMS: 5_000 });
    this.client.on('commandStarted', (event) => {
      const command = event.command as Record<string, unknown>;
      const target = command[event.commandName];
      // getMore names a cursor, not a collection; its `collection` field says which.
      const collection = typeof target === 'string' ? target : command.collection;
      const name = typeof collection === 'string' ? `${event.commandName} ${collection}` : event.commandName;
      this.started.set(event.requestId, `${name}${filterShape(command)}`);
    });
    const done = (requestId: number, fallback: string, ms: number, failed: boolean): void => {
      const name = this.started.get(requestId) ?? fallback;
      this.started.delete(requestId);
      this.record(failed ? `${name} (failed)` : name, ms);
    };
    this.client.on('commandSucceeded', (event) =>
      done(event.requestId, event.commandName, event.duration, false),
    );
    this.client.on('commandFailed', (event) =>
      done(event.requestId, event.commandName, event.duration, true),
    );
  }

  /** Forgets what was recorded so far. */
  reset(): void {
    this.stats = new Map();
  }

  /** What was recorded since the last reset, by command name. */
  snapshot(): Map<string, CommandStats> {
    return new Map(this.stats);
  }

  private record(name: string, ms: number): void {
    const entry = this.stats.get(name) ?? { count: 0, totalMs: 0 };
    entry.count++;
    entry.totalMs += ms;
    this.stats.set(name, entry);
  }
}

/** "insert 1.00 (0.71 ms), find 2.00 (1.20 ms)": commands per operation, for a note. */
export const perOperation = (stats: Map<string, CommandStats>, operations: number): string =>
  [...stats]
    .filter(([name]) => !['hello', 'ismaster', 'isMaster', 'endSessions'].includes(name.split(' ')[0]!))
    .sort((a, b) => b[1].totalMs - a[1].totalMs)
    .map(
      ([name, s]) =>
        `${name} ${(s.count / operations).toFixed(2)}× (${(s.totalMs / operations).toFixed(2)} ms)`,
    )
    .join(', ');

/** ` {_id}`, ` {q}`, … : the top-level fields a find or update filters on, to tell lookups from scans. */
const filterShape = (command: Record<string, unknown>): string => {
  const updates = command.updates as Array<{ q?: object }> | undefined;
  const filter = (command.filter ?? updates?.[0]?.q) as object | undefined;
  return filter === undefined ? '' : ` {${Object.keys(filter).join(',')}}`;
};
