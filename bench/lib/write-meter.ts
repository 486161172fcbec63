/** What a client sent between two looks: write commands, the bytes they carried, read commands. */
export interface Metered {
  /** insert, update, delete and findAndModify commands. */
  writes: number;
  /** Documents those commands inserted, updated, replaced or deleted (as sent, not as matched). */
  documents: number;
  /** BSON bytes of what they carried: inserted documents, update documents or replacements. */
  bytes: number;
  /** find, getMore, aggregate, count and distinct commands. */
  reads: number;
  /** `bytes` by the collection written. */
  bytesByCollection: Record<string, number>;
}

/** The part of a MongoDB client (any driver major version) the meter listens to. */
interface CommandEvents {
  on(event: 'commandStarted', listener: (event: { commandName: string; command: unknown }) => void): unknown;
}

const empty = (): Metered => ({ writes: 0, documents: 0, bytes: 0, reads: 0, bytesByCollection: {} });

const READS = new Set(['find', 'getMore', 'aggregate', 'count', 'distinct']);

/**
 * Counts what a client with `monitorCommands: true` writes, as it writes it: every insert's
 * documents, every update's update document or replacement (an overwrite in place counts each
 * time), every findAndModify's update. `sizeOf` is the BSON size function of that client's own
 * driver (documents may hold its BSON types).
 */
export class WriteMeter {
  private current = empty();

  constructor(client: CommandEvents, sizeOf: (document: object) => number) {
    client.on('commandStarted', ({ commandName, command }) => {
      const c = command as Record<string, unknown>;
      if (READS.has(commandName)) {
        this.current.reads++;
        return;
      }
      const carried = carriedBy(commandName, c);
      if (!carried) return;
      this.current.writes++;
      this.current.documents += carried.count;
      const collection = String(c[commandName]);
      for (const doc of carried.payloads) {
        const bytes = Array.isArray(doc) ? sizeOf({ p: doc }) : sizeOf(doc);
        this.current.bytes += bytes;
        this.current.bytesByCollection[collection] =
          (this.current.bytesByCollection[collection] ?? 0) + bytes;
      }
    });
  }

  /** What was sent since the last take, and starts counting anew. */
  take(): Metered {
    const taken = this.current;
    this.current = empty();
    return taken;
  }
}

/** How many documents a write command touches and what it carries; undefined for any other command. */
const carriedBy = (
  name: string,
  c: Record<string, unknown>,
): { count: number; payloads: object[] } | undefined => {
  const all = (payloads: object[]) => ({ count: payloads.length, payloads });
  switch (name) {
    case 'insert':
      return all((c.documents as object[] | undefined) ?? []);
    case 'update':
      return all(((c.updates as Array<{ u: object }> | undefined) ?? []).map((u) => u.u));
    case 'findAndModify':
      return all([(c.update as object | undefined) ?? {}]);
    case 'delete':
      // A delete carries only its filters: it writes no bytes of its own.
      return { count: ((c.deletes as unknown[] | undefined) ?? []).length, payloads: [] };
    default:
      return undefined;
  }
};
