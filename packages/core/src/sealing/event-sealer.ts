import { PreconditionError } from '../errors/index.js';
import type { EventData, RecordedEvent } from '../typing/index.js';
import type { DataKey, DataKeyring } from './data-keys.js';
import type { SealedContent } from './envelope.js';
import {
  SEALED_FIELD,
  clearPartOf,
  joinContent,
  openText,
  sealText,
  sealedContentOf,
  splitContent,
} from './envelope.js';

/**
 * What a sealed event whose key is destroyed reads as: its clear fields (ids, times, usage
 * figures) under this type, with `erasedType` the type it had. Folds and consumers know no such
 * type, so they skip it: a stream whose every content event is erased rebuilds as never created.
 */
export const ERASED_EVENT_TYPE = 'ContentErased';

/** Which streams are sealed, with what keys, and which event records an erasure. */
export interface SealingOptions {
  keyring: DataKeyring;
  /** Whether a stream's events carry content to seal (e.g. the conversation category). */
  sealed: (streamName: string) => boolean;
  /**
   * The event type that records a stream's erasure: never sealed (it must read after the key is
   * gone), and a process that reads it forgets the stream's key at once.
   */
  erasureType: string;
}

/**
 * Seals the content of events (see envelope.ts: every field but ids, times, numbers and a few
 * enum-like names) with their stream's data key, and opens it again on the way out. Generic:
 * it knows no event type but the erasure's. Events written before sealing existed read as they are.
 */
export class EventSealer {
  constructor(private readonly options: SealingOptions) {}

  /** Whether `streamName`'s events are sealed. */
  isSealed(streamName: string): boolean {
    return this.options.sealed(streamName);
  }

  /** The events to append, their content sealed under the stream's key (made on the first write). */
  async seal<E extends EventData>(tenantId: string, streamName: string, events: readonly E[]): Promise<E[]> {
    if (!this.isSealed(streamName)) return [...events];
    let key: Promise<DataKey> | undefined;
    const keyOnce = (): Promise<DataKey> => (key ??= this.options.keyring.keyToWrite(tenantId, streamName));
    const sealed: E[] = [];
    for (const event of events) sealed.push(await this.#sealOne(tenantId, streamName, event, keyOnce));
    return sealed;
  }

  /** Recorded events (a publish) with their content sealed, those already sealed as they are. */
  async sealRecorded(events: readonly RecordedEvent[]): Promise<RecordedEvent[]> {
    const sealed: RecordedEvent[] = [];
    for (const event of events) {
      const keyOnce = (): Promise<DataKey> =>
        this.options.keyring.keyToWrite(event.tenantId, event.streamName);
      sealed.push(
        this.isSealed(event.streamName)
          ? await this.#sealOne(event.tenantId, event.streamName, event, keyOnce)
          : event,
      );
    }
    return sealed;
  }

  /** Recorded events with their content opened (erased ones as ERASED_EVENT_TYPE), in order. */
  async openAll(events: readonly RecordedEvent[]): Promise<RecordedEvent[]> {
    this.#forgetErased(events);
    const opened: RecordedEvent[] = [];
    for (const event of events) opened.push(await this.open(event));
    return opened;
  }

  /** One recorded event with its content opened. */
  async open(event: RecordedEvent): Promise<RecordedEvent> {
    if (event.type === this.options.erasureType) {
      this.options.keyring.forget(event.tenantId, event.streamName);
      return event;
    }
    const sealed = sealedContentOf(event.data);
    if (sealed === undefined) return event;
    if ('erased' in sealed) return erased(event);
    const key = await this.options.keyring.keyFor(event.tenantId, event.streamName);
    return Buffer.isBuffer(key) ? opened(event, key, sealed) : erased(event);
  }

  /**
   * The events opened with keys this process already holds, synchronously (commit notices are
   * synchronous); undefined when one needs a key not held (the caller then skips the notice).
   */
  openHeld(events: readonly RecordedEvent[]): RecordedEvent[] | undefined {
    this.#forgetErased(events);
    const result: RecordedEvent[] = [];
    for (const event of events) {
      const sealed = sealedContentOf(event.data);
      if (sealed === undefined || event.type === this.options.erasureType) result.push(event);
      else if ('erased' in sealed) result.push(erased(event));
      else {
        const key = this.options.keyring.cached(event.tenantId, event.streamName);
        if (key === undefined) return undefined;
        result.push(opened(event, key, sealed));
      }
    }
    return result;
  }

  /** A snapshot's state sealed under the stream's key; undefined when the key is destroyed (not saved). */
  async sealState(tenantId: string, streamName: string, name: string, state: unknown): Promise<unknown> {
    if (!this.isSealed(streamName)) return state;
    const key = await this.options.keyring.keyToWrite(tenantId, streamName);
    if (!Buffer.isBuffer(key)) return undefined;
    return {
      [SEALED_FIELD]: sealText(key, JSON.stringify(state), snapshotContext(tenantId, streamName, name)),
    };
  }

  /** A snapshot's state opened; undefined when its key is destroyed (the snapshot is then a miss). */
  async openState(tenantId: string, streamName: string, name: string, state: unknown): Promise<unknown> {
    const sealed = sealedContentOf(state);
    if (sealed === undefined) return state;
    if ('erased' in sealed) return undefined;
    const key = await this.options.keyring.keyFor(tenantId, streamName);
    if (!Buffer.isBuffer(key)) return undefined;
    return JSON.parse(openOrThrow(key, sealed, snapshotContext(tenantId, streamName, name), streamName));
  }

  async #sealOne<E extends EventData>(
    tenantId: string,
    streamName: string,
    event: E,
    keyOnce: () => Promise<DataKey>,
  ): Promise<E> {
    if (event.type === this.options.erasureType || sealedContentOf(event.data) !== undefined) return event;
    const { clear, content } = splitContent(event.data);
    if (content === undefined) return event;
    const key = await keyOnce();
    const sealed: SealedContent = Buffer.isBuffer(key)
      ? sealText(key, JSON.stringify(content), eventContext(tenantId, streamName, event.type))
      : { erased: true };
    return { ...event, data: { ...clear, [SEALED_FIELD]: sealed } };
  }

  /** A batch holding a stream's erasure: forget that stream's key before opening anything of it. */
  #forgetErased(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      if (event.type === this.options.erasureType)
        this.options.keyring.forget(event.tenantId, event.streamName);
    }
  }
}

const eventContext = (tenantId: string, streamName: string, type: string): string =>
  `event|${tenantId}|${streamName}|${type}`;

const snapshotContext = (tenantId: string, streamName: string, name: string): string =>
  `snapshot|${tenantId}|${streamName}|${name}`;

const openOrThrow = (
  key: Buffer,
  sealed: Extract<SealedContent, { v: 1 }>,
  context: string,
  streamName: string,
): string => {
  try {
    return openText(key, sealed, context);
  } catch (error) {
    // A key that opens the stream's other events but not this one: tampered, or moved between streams.
    throw new PreconditionError(`sealed content of ${streamName} does not open with its data key`, {
      cause: error,
    });
  }
};

const opened = (
  event: RecordedEvent,
  key: Buffer,
  sealed: Extract<SealedContent, { v: 1 }>,
): RecordedEvent => {
  const context = eventContext(event.tenantId, event.streamName, event.type);
  const content = JSON.parse(openOrThrow(key, sealed, context, event.streamName)) as Record<string, unknown>;
  return { ...event, data: joinContent(clearPartOf(event.data), content) };
};

const erased = (event: RecordedEvent): RecordedEvent => ({
  ...event,
  type: ERASED_EVENT_TYPE,
  data: { ...clearPartOf(event.data), erasedType: event.type },
});
