import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { PlacedPage } from '../event-store/index.js';
import type { RecordedEvent } from '../typing/index.js';
import type { CommitDocument, LogPageDocument } from './commit-document.js';
import { pageKey, parseCommitKey, toRecordedEvents } from './commit-document.js';
import { isDuplicateKey } from './mongo-errors.js';

/** Settings of the sequencer. */
export interface SequencerOptions {
  /** Commits placed per round. Default 500. */
  batchSize?: number;
  /**
   * How often a round looks for commits of other processes even when this process has its own
   * to place (those are known without a query). Default 1000 ms.
   */
  discoveryIntervalMs?: number;
  /**
   * How often an idle round (no commits of this process to place) queries for other processes'
   * commits. 0 (default) queries every round; on a server that answers it with a scan, a few
   * hundred milliseconds trade cross-process latency for load.
   */
  idleDiscoveryMs?: number;
}

const streamKey = (c: Pick<CommitDocument, 't' | 's'>): string => `${c.t}\u0000${c.s}`;
const RECENT_PAGES = 64;

/** The log page that places `commits` in this order from global position `start`, each at its first event's. */
const pageOf = (start: number, commits: readonly CommitDocument[]): LogPageDocument => {
  let position = start;
  const placed = commits.map((c) => {
    const entry = { id: c._id, g: position };
    position += c.v - c.f + 1;
    return entry;
  });
  return { _id: pageKey(start), start, end: position - 1, commits: placed, at: new Date().toISOString() };
};
const KNOWN_HEADS = 10_000;
/** How long a sequencer that lost a position waits for the winner's notice before probing the log. */
const COLLISION_WAIT_MS = 50;

/**
 * Places committed commits into the global log. Positions are fenced by the log page: a page's
 * `_id` names its first position, so two sequencers racing for the same positions collide on the
 * unique `_id` and one of them gives up. A commit's `g` marker is written only after its page
 * exists, in position order, so a reader that follows `g` sees a prefix of the log and never
 * skips a position that appears later.
 *
 * The hot path makes no query but its writes: commits appended in this process are handed over in
 * memory, pages placed by other processes are told (`learn`, over the bus), and a page goes right
 * after the last one known when this sequencer knows the log up to there (`placeAfterKnown`).
 * The pages placed or told here are kept for the relay's and the projections' next reads.
 */
export class MongoSequencer {
  private last: LogPageDocument | undefined;
  private markedPage: string | undefined;
  private readonly hints = new Map<string, CommitDocument>();
  /**
   * Hints of commits written before this sequencer last loaded the log's end (`knownFrom`): they
   * may lie in a page it never saw until their flags are read.
   */
  private readonly unverified = new Set<string>();
  private knownFrom: number | undefined;
  /** Pages told here that do not follow the last known one yet (told out of order). */
  private readonly told = new Map<number, LogPageDocument>();
  /** Who waits for the last known page to move on (see `placeAfterKnown`). */
  private readonly lastMoved = new Set<() => void>();
  private readonly placedHeads = new Map<string, number>();
  private readonly recent = new Map<number, { end: number; events: RecordedEvent[] }>();
  /** Global positions of the events of `recent`, by event id. */
  private readonly positions = new Map<string, number>();
  private lastDiscovery = 0;
  private readonly batchSize: number;
  private discoveryIntervalMs: number;
  private idleDiscoveryMs: number;
  private readonly explicit: SequencerOptions;
  private marksPerCommand = Number.POSITIVE_INFINITY;
  /** The store's identity, which pages are told under; none told are taken in before it is known. */
  private logId: string | undefined;

  constructor(
    private readonly commits: Collection<CommitDocument>,
    private readonly pages: Collection<LogPageDocument>,
    options: SequencerOptions = {},
  ) {
    this.batchSize = options.batchSize ?? 500;
    this.discoveryIntervalMs = options.discoveryIntervalMs ?? 1000;
    this.idleDiscoveryMs = options.idleDiscoveryMs ?? 0;
    this.explicit = options;
  }

  /**
   * Sets how often rounds look for other processes' commits, busy or idle (see SequencerOptions),
   * where the options did not say.
   */
  setDiscoveryDefaults(ms: { intervalMs: number; idleMs: number }): void {
    this.discoveryIntervalMs = this.explicit.discoveryIntervalMs ?? ms.intervalMs;
    this.idleDiscoveryMs = this.explicit.idleDiscoveryMs ?? ms.idleMs;
  }

  /**
   * Caps the position markers one update command carries. FerretDB 1.24 on PostgreSQL holds a
   * connection per update statement until the command ends, so a command with more statements
   * than its pool has connections never finishes.
   */
  limitMarksPerCommand(n: number): void {
    this.marksPerCommand = n;
  }

  /**
   * The events of the pages from `after + 1` on, read by `_id` (each page, then its commits): how
   * the relay reads pages another process placed without a scan. An empty page when `after` is
   * the end of a page this sequencer knows (the last, or one kept) and no page follows it
   * (positions exist only in pages, so there is nothing to read). Undefined when neither holds
   * (`after` inside a page or unknown, or a page whose commit is not found): the caller then queries.
   */
  async pageEvents(
    after: number,
    limit: number,
  ): Promise<{ events: RecordedEvent[]; lastPosition: number } | undefined> {
    let page: LogPageDocument | null = await this.pages.findOne({ _id: pageKey(after + 1) });
    if (!page) return this.endsPage(after) ? { events: [], lastPosition: after } : undefined;
    const events: RecordedEvent[] = [];
    let lastPosition = after;
    while (page) {
      const placed: LogPageDocument['commits'] = page.commits;
      // The next page is probed while this one's commits are read.
      const [docs, next]: [Array<CommitDocument | null>, LogPageDocument | null] = await Promise.all([
        Promise.all(placed.map((c) => this.commits.findOne({ _id: c.id }))),
        this.pages.findOne({ _id: pageKey(page.end + 1) }),
      ]);
      if (docs.some((d) => d === null)) break;
      docs.forEach((d, i) => events.push(...toRecordedEvents({ ...d!, g: placed[i]!.g })));
      lastPosition = page.end;
      page = events.length < limit ? next : null;
    }
    return lastPosition === after ? undefined : { events, lastPosition };
  }

  /** Names the log (the store's identity) its pages are told under, and the only one it learns of. */
  identify(logId: string): void {
    this.logId = logId;
  }

  /** Whether a page known here (the last, or one kept) ends at `position`. */
  private endsPage(position: number): boolean {
    if (this.last?.end === position) return true;
    for (const page of this.recent.values()) if (page.end === position) return true;
    return false;
  }

  /** Tells the sequencer of a commit this process just wrote, so it need not query for it. */
  hint(commit: CommitDocument): void {
    if (this.hints.size >= this.batchSize * 4) return;
    this.hints.set(commit._id, commit);
    // `at` is taken before the commit's insert starts.
    if (this.knownFrom === undefined || Date.parse(commit.at) <= this.knownFrom)
      this.unverified.add(commit._id);
  }

  /**
   * A page another sequencer placed, told once it and its markers are durable. Its events serve
   * the next reads; when it follows the last page known here, it becomes the last (its commits'
   * hints dropped, their streams' heads learned), so the next page needs no probe.
   */
  learn(told: PlacedPage): void {
    if (this.logId === undefined || told.log !== this.logId) return;
    if (told.events) this.keepRecent(told.start, told.end, told.events);
    if (this.last && told.start <= this.last.end) return;
    const page: LogPageDocument = {
      _id: pageKey(told.start),
      start: told.start,
      end: told.end,
      commits: told.commits,
      at: '',
    };
    // A sequencer that knew no page starts from this one, as from a load of the log's end.
    if (!this.last) this.startFrom(page);
    this.told.set(page.start, page);
    this.followTold();
    if (this.told.size > RECENT_PAGES) this.told.clear();
  }

  /**
   * Takes `page` as the last page known (loaded, or told); the pages before it were never seen
   * here, so a commit already written may be in one of them: its hint is verified by its flag.
   */
  private startFrom(page: LogPageDocument | undefined): void {
    this.last = page;
    this.knownFrom = Date.now();
    for (const id of this.hints.keys()) this.unverified.add(id);
    if (page) this.forget(page);
  }

  /** Moves the last known page on through the told pages that follow it. */
  private followTold(): void {
    for (let next = this.last && this.told.get(this.last.end + 1); next; next = this.told.get(next.end + 1)) {
      this.told.delete(next.start);
      this.forget(next);
      // Its placer marked it before telling it, and the page before it before placing it.
      this.last = next;
      this.markedPage = next._id;
      for (const moved of this.lastMoved) moved();
    }
  }

  /** Resolves true once a told page follows `known`, false after `ms`. */
  private movedPast(known: LogPageDocument, ms: number): Promise<boolean> {
    if (this.last !== known) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (moved: boolean): void => {
        clearTimeout(timer);
        this.lastMoved.delete(onMoved);
        resolve(moved);
      };
      const onMoved = (): void => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.lastMoved.add(onMoved);
    });
  }

  /** The global position of an event of a page placed or told lately; undefined: not known here. */
  positionOf(eventId: string): number | undefined {
    return this.positions.get(eventId);
  }

  /** One round: returns how many commits were placed (0 when none, or when another sequencer won). */
  async run(forceDiscovery = false, ownOnly = false, onPlaced?: (page: PlacedPage) => void): Promise<number> {
    const discover = this.discoverNow(forceDiscovery, ownOnly);
    // Nothing of this process to place and no look for others' due: nothing to ask the server.
    if (!discover && this.hints.size === 0) return 0;
    if (!discover) {
      const placed = await this.placeAfterKnown(onPlaced);
      if (placed !== undefined) return placed;
    }
    const known = this.last;
    // The hinted commits' flags are read while the last page is probed. They are exact when the
    // probe finds no page after `known` (marked): a commit seen unplaced that another sequencer
    // places after the probe lands at `known.end + 1` at the earliest, where this round's page
    // then collides. When the probe finds a new page they are read again after its marking.
    const early =
      !discover && known !== undefined && known._id === this.markedPage ? this.stillUnplaced() : undefined;
    early?.catch(() => undefined);
    const last = await this.lastPage();
    if (last && last._id !== this.markedPage) await this.mark(last);
    const candidates = early !== undefined && last === known ? await early : await this.candidates(discover);
    const ready = await this.withPredecessorsPlaced(candidates);
    if (ready.length === 0) return 0;
    return (await this.place(last ? last.end + 1 : 1, ready, onPlaced)) ?? 0;
  }

  /**
   * The common case, without a query before the write: this process's commits go right after the
   * last page known here, when that page is marked and every hint was made (or its flag read)
   * while this sequencer knew the log. Every page since then was seen here (probed, placed or
   * told in order), so a hint still held is in none of them; a page already at `known.end + 1`
   * (another sequencer's, which may hold a hinted commit) makes the insert collide, and pages
   * only ever follow one another, so none lies further on without one there. A collision is
   * usually with a page whose notice is on its way: it waits briefly for it and tries once more.
   * Undefined: the caller takes the probing path (a collision again, no known page, or a
   * predecessor not known placed).
   */
  private async placeAfterKnown(
    onPlaced?: (page: PlacedPage) => void,
    again = true,
  ): Promise<number | undefined> {
    const known = this.last;
    if (!known || known._id !== this.markedPage || this.unverified.size > 0) return undefined;
    const ready = await this.withPredecessorsPlaced([...this.hints.values()].slice(0, this.batchSize));
    if (ready.length === 0 || this.last !== known) return undefined;
    const placed = await this.place(known.end + 1, ready, onPlaced);
    if (placed !== undefined || !again) return placed;
    return (await this.movedPast(known, COLLISION_WAIT_MS))
      ? this.placeAfterKnown(onPlaced, false)
      : undefined;
  }

  /**
   * Writes the page placing `ready` from `start`, then its markers, then tells `onPlaced`;
   * undefined when a page already holds `start` (another sequencer won it).
   */
  private async place(
    start: number,
    ready: CommitDocument[],
    onPlaced?: (page: PlacedPage) => void,
  ): Promise<number | undefined> {
    const page = pageOf(start, ready);
    try {
      await this.pages.insertOne(page);
    } catch (error) {
      if (isDuplicateKey(error)) return undefined;
      throw error;
    }
    this.last = page;
    await this.mark(page);
    for (const c of ready) {
      this.dropHint(c._id);
      this.remember(c);
    }
    this.followTold();
    const events = ready.every((c) => c.e !== undefined)
      ? ready.flatMap((c, i) => toRecordedEvents({ ...c, g: page.commits[i]!.g }))
      : undefined;
    if (events) this.keepRecent(start, page.end, events);
    if (this.logId !== undefined) {
      onPlaced?.({
        log: this.logId,
        start,
        end: page.end,
        commits: page.commits,
        ...(events ? { events } : {}),
      });
    }
    return page.commits.length;
  }

  private keepRecent(start: number, end: number, events: RecordedEvent[]): void {
    if (this.recent.has(start)) return;
    this.recent.set(start, { end, events });
    for (const e of events)
      if (e.globalPosition !== undefined) this.positions.set(e.eventId, e.globalPosition);
    if (this.recent.size <= RECENT_PAGES) return;
    const [oldest, dropped] = this.recent.entries().next().value!;
    this.recent.delete(oldest);
    for (const e of dropped.events) this.positions.delete(e.eventId);
  }

  private dropHint(id: string): void {
    this.hints.delete(id);
    this.unverified.delete(id);
  }

  /**
   * Events of pages this process placed, from `after + 1`, when it has them in memory: the
   * relay's next read costs no query. Undefined when `after + 1` does not start such a page.
   */
  recentEvents(after: number, limit: number): { events: RecordedEvent[]; lastPosition: number } | undefined {
    let page = this.recent.get(after + 1);
    if (!page) return undefined;
    const events: RecordedEvent[] = [];
    let lastPosition = after;
    while (page && events.length < limit) {
      events.push(...page.events.map((e) => structuredClone(e)));
      lastPosition = page.end;
      page = this.recent.get(page.end + 1);
    }
    return { events, lastPosition };
  }

  /** The last page of the log: known in memory and probed forward by `_id`, else found by a query. */
  private async lastPage(): Promise<LogPageDocument | undefined> {
    if (!this.last) {
      this.startFrom((await this.pages.find({}).sort({ _id: -1 }).limit(1).next()) ?? undefined);
      if (!this.last) return undefined;
    }
    // Another sequencer may have written pages since: follow them.
    let last: LogPageDocument = this.last;
    for (;;) {
      const next: LogPageDocument | null = await this.pages.findOne({ _id: pageKey(last.end + 1) });
      if (!next) return (this.last = last);
      this.forget(next);
      last = next;
    }
  }

  /**
   * Drops hints of commits another sequencer placed (in a page this one did not write), and learns
   * their streams' placed heads: a commit's last version follows from its key (stream and first
   * version) and the next position, so the next commit of those streams needs no query.
   */
  private forget(page: LogPageDocument): void {
    page.commits.forEach((c, i) => {
      this.dropHint(c.id);
      const key = parseCommitKey(c.id);
      const end = (page.commits[i + 1]?.g ?? page.end + 1) - 1;
      if (key) this.remember({ t: key.t, s: key.s, v: key.f + end - c.g });
    });
  }

  /** Commits to place: this process's own, plus (now and then, or when it has none) everyone's. */
  private async candidates(discover: boolean): Promise<CommitDocument[]> {
    if (!discover) return this.stillUnplaced();
    this.lastDiscovery = Date.now();
    return this.commits.find({ q: 1 }).sort({ at: 1 }).limit(this.batchSize).toArray();
  }

  /** Whether this round looks for other processes' commits (see SequencerOptions). */
  private discoverNow(force: boolean, ownOnly: boolean): boolean {
    if (ownOnly) return false;
    const since = Date.now() - this.lastDiscovery;
    return (
      force || since >= this.discoveryIntervalMs || (this.hints.size === 0 && since >= this.idleDiscoveryMs)
    );
  }

  /** The hinted commits still unplaced (flag read by `_id`); drops the hints of placed ones. */
  private async stillUnplaced(): Promise<CommitDocument[]> {
    if (this.hints.size === 0) return [];
    // Every page up to the last is marked by now, so a hinted commit still flagged `q: 1` is in
    // no page: checking the flag by `_id` (a point lookup) is exact, where the hint alone is not
    // (another sequencer may have placed it before this one learned the log's last page).
    const hinted = [...this.hints.values()].slice(0, this.batchSize);
    const flags = await Promise.all(
      hinted.map((c) => this.commits.findOne({ _id: c._id }, { projection: { q: 1 } })),
    );
    return hinted.filter((c, i) => {
      if (flags[i]?.q === 1) {
        this.unverified.delete(c._id);
        return true;
      }
      this.dropHint(c._id);
      return false;
    });
  }

  /** Writes each commit's position marker, in position order (idempotent: the page decides them). */
  private async mark(page: LogPageDocument): Promise<void> {
    const ops: AnyBulkWriteOperation<CommitDocument>[] = page.commits.map((c) => ({
      updateOne: { filter: { _id: c.id }, update: { $set: { g: c.g, q: 0 } } },
    }));
    for (let i = 0; i < ops.length; i += this.marksPerCommand) {
      await this.commits.bulkWrite(ops.slice(i, i + this.marksPerCommand), { ordered: true });
    }
    // Unless a page told meanwhile follows it (marked by its placer, like this one before it).
    if (!this.last || this.last.start <= page.start) this.markedPage = page._id;
  }

  private remember(c: Pick<CommitDocument, 't' | 's' | 'v'>): void {
    const key = streamKey(c);
    if ((this.placedHeads.get(key) ?? 0) > c.v) return;
    this.placedHeads.delete(key);
    this.placedHeads.set(key, c.v);
    if (this.placedHeads.size > KNOWN_HEADS) this.placedHeads.delete(this.placedHeads.keys().next().value!);
  }

  /**
   * Orders a batch so each stream's commits come in version order, and drops the commits of any
   * stream whose preceding commit is neither placed already nor in the batch (it comes next round).
   */
  private async withPredecessorsPlaced(batch: CommitDocument[]): Promise<CommitDocument[]> {
    const byStream = new Map<string, CommitDocument[]>();
    for (const c of batch) {
      const list = byStream.get(streamKey(c)) ?? [];
      list.push(c);
      byStream.set(streamKey(c), list);
    }
    const needCheck: Array<{ t: string; s: string; v: number }> = [];
    for (const [key, list] of byStream) {
      list.sort((a, b) => a.f - b.f);
      const first = list[0]!;
      if (first.f > 1 && this.placedHeads.get(key) !== first.f - 1) {
        needCheck.push({ t: first.t, s: first.s, v: first.f - 1 });
      }
    }
    const blocked = new Set<string>();
    if (needCheck.length > 0) {
      const predecessors = await this.commits
        .find({ $or: needCheck }, { projection: { t: 1, s: 1, v: 1, q: 1 } })
        .toArray();
      const placedOnes = predecessors.filter((p) => p.q === 0);
      // Placed heads known from now on: the next commit of those streams needs no query.
      for (const p of placedOnes) this.remember(p);
      const placed = new Set(placedOnes.map(streamKey));
      for (const n of needCheck) if (!placed.has(streamKey(n))) blocked.add(streamKey(n));
    }
    // Keep the batch's arrival order across streams, but each stream's own commits in version order.
    const next = new Map([...byStream.keys()].map((k) => [k, 0]));
    const ordered: CommitDocument[] = [];
    for (const c of batch) {
      const key = streamKey(c);
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
