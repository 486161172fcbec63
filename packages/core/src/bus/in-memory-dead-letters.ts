import { NotFoundError } from '../errors/index.js';
import type { DeadLetter, DeadLetterStore } from './event-bus.js';

/** The dev-mode dead-letter store, kept in memory; returns copies so callers cannot alter it. */
export class InMemoryDeadLetters implements DeadLetterStore {
  readonly #records = new Map<string, DeadLetter>();

  record(deadLetter: DeadLetter): Promise<void> {
    this.#records.set(deadLetter.id, structuredClone(deadLetter));
    return Promise.resolve();
  }

  list(
    options: { consumer?: string; tenantId?: string; includeReplayed?: boolean; limit?: number } = {},
  ): Promise<DeadLetter[]> {
    const matching = [...this.#records.values()]
      .filter((d) => options.consumer === undefined || d.consumer === options.consumer)
      .filter((d) => options.tenantId === undefined || d.tenantId === options.tenantId)
      .filter((d) => options.includeReplayed === true || d.replayedAt === undefined)
      .sort((a, b) => a.deadAt.localeCompare(b.deadAt) || a.id.localeCompare(b.id));
    return Promise.resolve(matching.slice(0, options.limit ?? 100).map((d) => structuredClone(d)));
  }

  get(id: string): Promise<DeadLetter | undefined> {
    const found = this.#records.get(id);
    return Promise.resolve(found === undefined ? undefined : structuredClone(found));
  }

  markReplayed(id: string, at: string): Promise<void> {
    const found = this.#records.get(id);
    if (found === undefined) return Promise.reject(new NotFoundError(`dead letter ${id} not found`));
    found.replayedAt = at;
    return Promise.resolve();
  }
}
