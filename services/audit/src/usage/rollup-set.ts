import type { DayBody, MonthBody, MonthDay, RollupDoc } from './rollup-documents.js';
import { DAY_DIMENSIONS, dayIdOf, monthIdOf, quarterOf } from './rollup-documents.js';
import type { UsageFact } from './usage-facts.js';
import { addAt } from './usage-totals.js';
import { utcDateOf } from './time-zones.js';

/**
 * Rollup documents being updated by one page of the log. Each fact is added to a document only
 * when its log position is above the position the document already includes, so a page applied
 * again after a crash (whole or in part) adds nothing twice, and the order of documents written
 * does not matter.
 */
export class RollupSet {
  readonly months = new Map<string, RollupDoc<MonthBody>>();
  readonly days = new Map<string, RollupDoc<DayBody>>();
  readonly changedMonths = new Set<string>();
  readonly changedDays = new Set<string>();

  /** The document ids a fact touches (load them before `apply`). */
  static idsOf(fact: Pick<UsageFact, 'tenantId' | 'at'>): { month: string; days: string[] } {
    return {
      month: monthIdOf(fact.tenantId, fact.at),
      days: DAY_DIMENSIONS.map((dimension) => dayIdOf(fact.tenantId, fact.at, dimension)),
    };
  }

  /** Adds loaded documents (those not found start empty at position 0). */
  load(months: Iterable<RollupDoc<MonthBody>>, days: Iterable<RollupDoc<DayBody>>): void {
    for (const doc of months) this.months.set(doc.id, doc);
    for (const doc of days) this.days.set(doc.id, doc);
  }

  /**
   * Adds the fact at log position `position` to the documents that do not include it yet; true
   * when its month document did not (the fact is counted for the first time there).
   */
  apply(fact: UsageFact, position: number): boolean {
    const month = monthIdOf(fact.tenantId, fact.at);
    const date = utcDateOf(fact.at);
    const quarter = String(quarterOf(fact.at));
    const monthDoc = this.doc(this.months, month, fact.tenantId, (): MonthBody => ({ d: {} }));
    const fresh = position > monthDoc.pos;
    if (fresh) {
      const dd = date.slice(8, 10);
      const entry: MonthDay = (monthDoc.body.d[dd] ??= { s: {}, m: {}, u: {}, a: {} });
      addAt(entry.s, quarter, fact.totals);
      addAt(entry.m, fact.model, fact.totals);
      addAt(entry.u, fact.user, fact.totals);
      addAt(entry.a, fact.agent, fact.totals);
      this.changedMonths.add(month);
    }
    for (const dimension of DAY_DIMENSIONS) {
      const day = dayIdOf(fact.tenantId, fact.at, dimension);
      const dayDoc = this.doc(this.days, day, fact.tenantId, (): DayBody => ({ q: {} }));
      if (position > dayDoc.pos) {
        addAt((dayDoc.body.q[quarter] ??= {}), fact[dimension], fact.totals);
        this.changedDays.add(day);
      }
    }
    return fresh;
  }

  /** The changed documents, marked as including the log up to `position`. */
  changed(position: number): { months: RollupDoc<MonthBody>[]; days: RollupDoc<DayBody>[] } {
    const mark = <B>(doc: RollupDoc<B>): RollupDoc<B> => {
      doc.pos = Math.max(doc.pos, position);
      return doc;
    };
    return {
      months: [...this.changedMonths].map((id) => mark(this.months.get(id)!)),
      days: [...this.changedDays].map((id) => mark(this.days.get(id)!)),
    };
  }

  private doc<B>(map: Map<string, RollupDoc<B>>, id: string, tenantId: string, empty: () => B): RollupDoc<B> {
    let doc = map.get(id);
    if (!doc) map.set(id, (doc = { id, tenantId, pos: 0, body: empty() }));
    return doc;
  }
}
