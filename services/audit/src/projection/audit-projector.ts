import type { EventStore, RecordedEvent } from '@keel/core';
import { clearPartAsWritten, isEvent } from '@keel/core';
import type { ConversationDeleted, UsageRecorded } from '@keel/events';
import { CONVERSATION_DELETED } from '@keel/events';
import type { AuditStorage, TurnInfo } from '../storage/audit-storage.js';
import type { AuditEntry } from '../trail/audit-entry.js';
import { auditEntryOf, CONVERSATION_TEXT_DETAILS } from '../trail/audit-events.js';
import type { DayBody, MonthBody, RollupDoc } from '../usage/rollup-documents.js';
import { RollupSet } from '../usage/rollup-set.js';
import type { UsageFact } from '../usage/usage-facts.js';
import { feedbackFactOf, turnInfoOf, turnKey, usageFactOf } from '../usage/usage-facts.js';

/** Checkpoint name of the projection: the global log position every rollup and entry is complete up to. */
export const PROJECTION_CHECKPOINT = 'audit-projection';

/** Event ids whose log position the projector remembers after applying them. */
const APPLIED_POSITIONS = 20_000;

/** Pages read after the delivered event's own before its delivery is acked. */
const MAX_PAGES_PAST_TARGET = 50;

/** Settings of the projector. */
export interface AuditProjectorOptions {
  /** Events read from the log per page (whole commits). Default 2000. */
  pageSize?: number;
  /** Rollup documents of each kind kept in memory between pages. Default 16. */
  cachedDocs?: number;
  /** Told each model call's cost (USD) and tenant the first time a page adds it to the rollups (metrics). */
  onCost?: (tenantId: string, costUsd: number) => void;
}

/** What the projector has done, for logs, metrics and tests. */
export interface ProjectorStats {
  position: number;
  pages: number;
  events: number;
  usageEvents: number;
}

/**
 * Derives usage rollups and the audit trail from the event log, in global order, a page at a
 * time: it reads the log after its durable checkpoint, updates each rollup document it touches
 * once per page, appends the page's audit entries, then moves the checkpoint. Exactly once by
 * construction: every rollup document records the log position it includes, and an event at or
 * below it is not added again, so a page applied twice (after a crash between its writes and
 * the checkpoint) changes nothing it already changed; trail entries and the turn index are
 * keyed by event and turn.
 *
 * One writer at a time: `catchUp` runs from the audit consumer's handler, which the bus runs
 * once at a time across every instance (maxInFlight 1). Documents cached between pages are
 * trusted only while the checkpoint is still the one this instance saved.
 *
 * It reads events in their current shapes: the store it is given lifts old ones on read (the
 * infrastructure's store does, `upcastingReads`), so a `UsageRecorded` always has its `at`.
 */
export class AuditProjector {
  readonly stats: ProjectorStats = { position: 0, pages: 0, events: 0, usageEvents: 0 };
  private readonly pageSize: number;
  private readonly cachedDocs: number;
  private readonly onCost: ((tenantId: string, costUsd: number) => void) | undefined;
  private readonly months = new Map<string, RollupDoc<MonthBody>>();
  private readonly days = new Map<string, RollupDoc<DayBody>>();
  /** Turn infos are fixed once written: safe to keep whoever wrote them. */
  private readonly turns = new Map<string, TurnInfo>();
  /** Log positions of the events this instance applied last, by event id (oldest first). */
  private readonly applied = new Map<string, number>();
  /** The checkpoint this instance saved last (-1: none, or its cache is not to be trusted). */
  private saved = -1;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    private readonly storage: AuditStorage,
    options: AuditProjectorOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 2000;
    this.cachedDocs = options.cachedDocs ?? 16;
    this.onCost = options.onCost;
  }

  /**
   * Applies the log up to at least `target` (a global position), and on to the end of the log
   * as it reads it (until a page shorter than a full one, at most MAX_PAGES_PAST_TARGET pages
   * more); undefined: to the end. Resolves once at least the target is durably projected.
   */
  catchUp(target?: number, alive?: () => void): Promise<void> {
    const run = this.chain.then(() => this.run(target, alive));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async run(target: number | undefined, alive?: () => void): Promise<void> {
    if (target !== undefined && target <= this.stats.position && this.saved === this.stats.position) return;
    let position = await this.storage.checkpoints.load(PROJECTION_CHECKPOINT);
    if (position !== this.saved) this.forgetDocs();
    this.stats.position = position;
    if (target !== undefined && target <= position) return;
    let extraPages = 0;
    for (;;) {
      const page = await this.store.readAll({ after: position, limit: this.pageSize, scope: 'all-tenants' });
      if (page.events.length === 0) return;
      try {
        await this.applyPage(page.events, page.lastPosition);
        await this.storage.checkpoints.save(PROJECTION_CHECKPOINT, page.lastPosition);
      } catch (error) {
        this.forgetDocs();
        throw error;
      }
      position = this.saved = this.stats.position = page.lastPosition;
      this.rememberApplied(page.events);
      this.stats.pages++;
      this.stats.events += page.events.length;
      alive?.();
      // Past the target, go on to the end of the log (the deliveries behind it then cost nothing),
      // but not forever under a steady stream: the delivery must be acked some time. A short
      // page was the end as read: no read more just to find it empty.
      if (target === undefined || position < target) continue;
      if (page.events.length < this.pageSize || ++extraPages > MAX_PAGES_PAST_TARGET) return;
    }
  }

  /**
   * The log position of an event this instance projected lately (no query: a redelivered event
   * behind the projection is acked at once); undefined when not among them.
   */
  positionOf(eventId: string): number | undefined {
    return this.applied.get(eventId);
  }

  private rememberApplied(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      if (event.globalPosition !== undefined) this.applied.set(event.eventId, event.globalPosition);
    }
    for (const id of this.applied.keys()) {
      if (this.applied.size <= APPLIED_POSITIONS) break;
      this.applied.delete(id);
    }
  }

  /** Applies one page; every write is idempotent, so a failure part way is retried whole. */
  async applyPage(read: readonly RecordedEvent[], lastPosition: number): Promise<void> {
    // A deleted conversation's events still count (usage, who did what): by their clear part.
    const events = read.map(clearPartAsWritten);
    const { pageTurns, entries } = turnsAndEntriesOf(events);
    for (const [key, info] of pageTurns) this.rememberTurn(key, { ...this.turns.get(key), ...info });
    const facts = await this.usageFactsOf(events, lastPosition);
    const { set, counted } = await this.rolledUp(facts);
    const changed = set.changed(lastPosition);
    await Promise.all([
      this.storage.saveTurns(pageTurns),
      this.storage.appendAudit(entries),
      this.storage.saveMonths(changed.months),
      this.storage.saveDays(changed.days),
    ]);
    await this.dropDeletedText(events);
    // Once durable: a page that failed part way is retried whole and counts its facts then.
    for (const fact of counted) if (fact.totals[2] > 0) this.onCost?.(fact.tenantId, fact.totals[2] / 1e9);
    for (const doc of set.months.values()) this.cache(this.months, doc);
    for (const doc of set.days.values()) this.cache(this.days, doc);
    this.stats.usageEvents += facts.length;
  }

  /** A deleted conversation's entries (this page's too) keep who, when and what, not its text. */
  private async dropDeletedText(events: readonly RecordedEvent[]): Promise<void> {
    for (const event of events) {
      if (!isEvent<ConversationDeleted>(event, CONVERSATION_DELETED)) continue;
      await this.storage.dropConversationText(
        event.tenantId,
        event.data.conversationId,
        CONVERSATION_TEXT_DETAILS,
      );
    }
  }

  /** The page's usage facts at their log positions, each with its turn's user and agent (loaded when not known). */
  private async usageFactsOf(
    events: readonly RecordedEvent[],
    lastPosition: number,
  ): Promise<Array<{ fact: UsageFact; position: number }>> {
    const usage = events.filter((e) => isEvent<UsageRecorded>(e, 'UsageRecorded'));
    const missing = [
      ...new Set(usage.map((e) => turnKey(e.tenantId, e.data.turnId)).filter((key) => !this.turns.has(key))),
    ];
    if (missing.length > 0) {
      for (const [key, info] of await this.storage.loadTurns(missing)) this.rememberTurn(key, info);
    }
    const facts: Array<{ fact: UsageFact; position: number }> = [];
    for (const event of usage) {
      const key = turnKey(event.tenantId, event.data.turnId);
      const fact = usageFactOf(event, this.turns.get(key));
      if (fact) facts.push({ fact, position: event.globalPosition ?? lastPosition });
    }
    for (const event of events) {
      const fact = feedbackFactOf(event);
      if (fact) facts.push({ fact, position: event.globalPosition ?? lastPosition });
    }
    return facts;
  }

  /** The rollup documents the facts touch (cached or loaded), each fact applied; `counted`: those not in them before. */
  private async rolledUp(
    facts: ReadonlyArray<{ fact: UsageFact; position: number }>,
  ): Promise<{ set: RollupSet; counted: UsageFact[] }> {
    const set = new RollupSet();
    const counted: UsageFact[] = [];
    if (facts.length === 0) return { set, counted };
    const monthIds = new Set<string>();
    const dayIds = new Set<string>();
    for (const { fact } of facts) {
      const ids = RollupSet.idsOf(fact);
      monthIds.add(ids.month);
      for (const id of ids.days) dayIds.add(id);
    }
    set.load(
      await this.cachedOrLoaded(this.months, [...monthIds], (ids) => this.storage.loadMonths(ids)),
      await this.cachedOrLoaded(this.days, [...dayIds], (ids) => this.storage.loadDays(ids)),
    );
    for (const { fact, position } of facts) if (set.apply(fact, position)) counted.push(fact);
    return { set, counted };
  }

  private async cachedOrLoaded<B>(
    cache: Map<string, RollupDoc<B>>,
    ids: string[],
    load: (ids: string[]) => Promise<Map<string, RollupDoc<B>>>,
  ): Promise<RollupDoc<B>[]> {
    const hits = ids.flatMap((id) => (cache.has(id) ? [cache.get(id)!] : []));
    const misses = ids.filter((id) => !cache.has(id));
    return misses.length === 0 ? hits : [...hits, ...(await load(misses)).values()];
  }

  private cache<B>(cache: Map<string, RollupDoc<B>>, doc: RollupDoc<B>): void {
    cache.delete(doc.id);
    cache.set(doc.id, doc);
    while (cache.size > this.cachedDocs) cache.delete(cache.keys().next().value!);
  }

  private rememberTurn(key: string, info: TurnInfo): void {
    if (this.turns.size >= 200_000) this.turns.clear();
    this.turns.set(key, info);
  }

  private forgetDocs(): void {
    this.months.clear();
    this.days.clear();
    this.saved = -1;
  }
}

/** What a page tells the turn index (merged per turn) and the audit trail's entries. */
const turnsAndEntriesOf = (
  events: readonly RecordedEvent[],
): { pageTurns: Map<string, TurnInfo>; entries: AuditEntry[] } => {
  const pageTurns = new Map<string, TurnInfo>();
  const entries: AuditEntry[] = [];
  for (const event of events) {
    const turn = turnInfoOf(event);
    if (turn) pageTurns.set(turn.key, { ...pageTurns.get(turn.key), ...turn.info });
    const entry = auditEntryOf(event);
    if (entry) entries.push(entry);
  }
  return { pageTurns, entries };
};
