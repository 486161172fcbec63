import type {
  AppendOptions,
  AppendResult,
  EventData,
  EventStoreAdapter,
  ReadAllOptions,
  ReadAllPage,
  ReadStreamOptions,
  RecordedEvent,
  SnapshotStore,
} from '@keel/core';
import { now } from './stats.js';

/** One append that went through an `ObservedStore`: what it wrote, and when it began and returned. */
export interface ObservedAppend {
  tenantId: string;
  streamName: string;
  events: EventData[];
  /** `now()` when the append was called, and when it returned (the commit is durable then). */
  startedAt: number;
  committedAt: number;
  result: AppendResult;
}

/**
 * An EventStore that hands every successful append to `onAppend` with its timing (and each append
 * about to start to `onAppendStart`), and passes everything else through: lets a benchmark see
 * when Keel's own code paths commit what (a commit of a given event, a step's appends) without
 * touching them. Costs a closure and two clock reads per append.
 */
export class ObservedStore implements EventStoreAdapter {
  constructor(
    readonly inner: EventStoreAdapter,
    private readonly onAppend: (append: ObservedAppend) => void,
    private readonly onAppendStart?: (streamName: string, events: EventData[]) => void,
  ) {}

  async append(
    tenantId: string,
    streamName: string,
    events: EventData[],
    options?: AppendOptions,
  ): Promise<AppendResult> {
    this.onAppendStart?.(streamName, events);
    const startedAt = now();
    const result = await this.inner.append(tenantId, streamName, events, options);
    this.onAppend({ tenantId, streamName, events, startedAt, committedAt: now(), result });
    return result;
  }

  read(tenantId: string, streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.inner.read(tenantId, streamName, options);
  }

  streamVersion(tenantId: string, streamName: string): Promise<number> {
    return this.inner.streamVersion(tenantId, streamName);
  }

  readAll(options: ReadAllOptions): Promise<ReadAllPage> {
    return this.inner.readAll(options);
  }

  sequence(): Promise<number> {
    return this.inner.sequence();
  }

  waitForAppend(timeoutMs: number, signal?: AbortSignal, since?: number): Promise<void> {
    return this.inner.waitForAppend(timeoutMs, signal, since);
  }

  get appendCount(): number {
    return this.inner.appendCount;
  }

  onCommitted(listener: (events: readonly RecordedEvent[]) => void): () => void {
    return this.inner.onCommitted(listener);
  }

  get snapshots(): SnapshotStore {
    return this.inner.snapshots;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
