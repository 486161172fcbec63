import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { CommitDocument, LogPageDocument } from './commit-document.js';
import { isDuplicateKey } from './mongo-errors.js';

/**
 * Places committed commits into the global log. Positions are fenced by the log page: a page's
 * `_id` is its first position, so two sequencers racing for the same positions collide on the
 * unique `_id` and one of them gives up. A commit's `g` marker is written only after its page
 * exists, in position order, so a reader that follows `g` sees a prefix of the log and never
 * skips a position that appears later.
 */
export class MongoSequencer {
  private markedPage = -1;

  constructor(
    private readonly commits: Collection<CommitDocument>,
    private readonly pages: Collection<LogPageDocument>,
    private readonly batchSize = 500,
  ) {}

  /** One round: returns how many commits were placed (0 when none, or when another sequencer won). */
  async run(): Promise<number> {
    const last = await this.pages.find({}).sort({ _id: -1 }).limit(1).next();
    if (last && last._id !== this.markedPage) await this.mark(last);
    const pending = await this.commits
      .find({ q: 1 }, { projection: { e: 0 } })
      .sort({ at: 1 })
      .limit(this.batchSize)
      .toArray();
    const ready = await this.withPredecessorsPlaced(pending as CommitDocument[]);
    if (ready.length === 0) return 0;

    const start = last ? last.end + 1 : 1;
    let position = start;
    const placed = ready.map((c) => {
      const entry = { id: c._id, g: position };
      position += c.v - c.f + 1;
      return entry;
    });
    const page: LogPageDocument = {
      _id: start,
      end: position - 1,
      commits: placed,
      at: new Date().toISOString(),
    };
    try {
      await this.pages.insertOne(page);
    } catch (error) {
      if (isDuplicateKey(error)) return 0;
      throw error;
    }
    await this.mark(page);
    return placed.length;
  }

  /** Writes each commit's position marker, in position order (idempotent: the page decides them). */
  private async mark(page: LogPageDocument): Promise<void> {
    const ops: AnyBulkWriteOperation<CommitDocument>[] = page.commits.map((c) => ({
      updateOne: { filter: { _id: c.id }, update: { $set: { g: c.g, q: 0 } } },
    }));
    if (ops.length > 0) await this.commits.bulkWrite(ops, { ordered: true });
    this.markedPage = page._id;
  }

  /**
   * Orders a batch so each stream's commits come in version order, and drops the commits of any
   * stream whose preceding commit is neither placed already nor in the batch (it comes next round).
   */
  private async withPredecessorsPlaced(batch: CommitDocument[]): Promise<CommitDocument[]> {
    const byStream = new Map<string, CommitDocument[]>();
    for (const c of batch) {
      const key = `${c.t}\u0000${c.s}`;
      const list = byStream.get(key) ?? [];
      list.push(c);
      byStream.set(key, list);
    }
    const needCheck: Array<{ t: string; s: string; v: number }> = [];
    for (const list of byStream.values()) {
      list.sort((a, b) => a.f - b.f);
      const first = list[0]!;
      if (first.f > 1) needCheck.push({ t: first.t, s: first.s, v: first.f - 1 });
    }
    const blocked = new Set<string>();
    if (needCheck.length > 0) {
      const predecessors = await this.commits
        .find({ $or: needCheck }, { projection: { t: 1, s: 1, v: 1, q: 1 } })
        .toArray();
      const placed = new Set(predecessors.filter((p) => p.q === 0).map((p) => `${p.t}\u0000${p.s}`));
      for (const n of needCheck) if (!placed.has(`${n.t}\u0000${n.s}`)) blocked.add(`${n.t}\u0000${n.s}`);
    }
    // Keep the batch's arrival order across streams, but each stream's own commits in version order.
    const next = new Map([...byStream.keys()].map((k) => [k, 0]));
    const ordered: CommitDocument[] = [];
    for (const c of batch) {
      const key = `${c.t}\u0000${c.s}`;
      if (blocked.has(key)) continue;
      const list = byStream.get(key)!;
      const i = next.get(key)!;
      // Contiguity inside the batch: a gap means the missing commit is not visible yet.
      if (i > 0 && list[i]!.f !== list[i - 1]!.v + 1) continue;
      ordered.push(list[i]!);
      next.set(key, i + 1);
    }
    return ordered;
  }
}
