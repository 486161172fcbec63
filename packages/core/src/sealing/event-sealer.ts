import { PreconditionError } from '../errors/index.js';
import type { EventData, RecordedEvent } from '../typing/index.js';
import type { DataKey, DataKeyring } from './data-keys.js';
import type { SealedContent } from './envelope.js';
import { OpenedContents } from './opened-contents.js';
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

/**
 * An event as its clear part tells it: an erased one (ERASED_EVENT_TYPE) under the type it had,
 * with its clear fields only (ids, times, usage figures, enum words); any other as it is. For the
 * projections that must go on counting a deleted conversation's events (usage, the audit trail)
 * and need none of its content.
 */
export const clearPartAsWritten = (event: RecordedEvent): RecordedEvent => {
  if (event.type !== ERASED_EVENT_TYPE) return event;
  const { erasedType, ...clear } = event.data as { erasedType?: unknown };
  return typeof erasedType === 'string' ? { ...event, type: erasedType, data: clear } : event;
};

/** Which events are sealed, with what keys, and which event records an erasure. */
export interface SealingOptions {
  keyring: DataKeyring;
  /**
   * The stream whose data key seals an event's content: its own (a conversation), the one its
   * data names (a tool call's conversation, by a clear `…Id` field), or undefined: not sealed.
   * Answers the same for the event's sealed form (it may read clear fields only). For snapshots
   * it is asked with `data` undefined.
   */
  keyStream: (event: { streamName: string; data: unknown }) => string | undefined;
  /**
   * The event type (or types) that record a stream's erasure: never sealed (it must read after
   * the key is gone), and a process that reads one forgets the stream's key at once.
   */
  erasureType: string | readonly string[];
}

/**
 * Seals the content of events (see envelope.ts: every field but ids, times, numbers and a few
 * enum-like names) with their key stream's data key, and opens it again on the way out. Generic:
 * it knows no event type but the erasure's. Events written before sealing existed read as they are.
 */
export class EventSealer {
  readonly #erasureTypes: ReadonlySet<string>;
  /** Events' contents opened lately: the same event opened again (another consumer, a read) is not decrypted again. */
  readonly #opened = new OpenedContents();

  constructor(private readonly options: SealingOptions) {
    const { erasureType } = options;
    this.#erasureTypes = new Set(typeof erasureType === 'string' ? [erasureType] : erasureType);
  }

  /** Whether an event records its stream's erasure. */
  isErasure(type: string): boolean {
    return this.#erasureTypes.has(type);
  }

  /** The stream whose key seals this stream's snapshots (undefined: not sealed). */
  snapshotKeyStream(streamName: string): string | undefined {
    return this.options.keyStream({ streamName, data: undefined });
  }

  /** The events to append, their content sealed (a key stream's key is made on its first write). */
  async seal<E extends EventData>(tenantId: string, streamName: string, events: readonly E[]): Promise<E[]> {
    const sealed: E[] = [];
    for (const event of events) sealed.push(await this.#sealOne(tenantId, streamName, event));
    return sealed;
  }

  /**
   * Recorded events (a publish) with their content sealed, those already sealed as they are. An
   * erasure destroys its stream's key before it is published: the relay publishes every commit,
   * after any crash, so an erasure whose writer died between its append and the key's destruction
   * still completes.
   */
  async sealRecorded(events: readonly RecordedEvent[]): Promise<RecordedEvent[]> {
    const sealed: RecordedEvent[] = [];
    for (const event of events) {
      if (this.isErasure(event.type))
        await this.options.keyring.destroy(event.tenantId, event.streamName, event.recordedAt);
      sealed.push(await this.#sealOne(event.tenantId, event.streamName, event));
    }
    return sealed;
  }

  /**
   * The events as `sealRecorded` would give them, when that needs no key and destroys none: every
   * one already sealed (a commit as the log holds it) or with nothing to seal, and no erasure.
   * Undefined otherwise (ask `sealRecorded`). Synchronous, so a fast publish of a commit reaches
   * the connection before the appending caller resumes.
   */
  sealedNow(events: readonly RecordedEvent[]): RecordedEvent[] | undefined {
    for (const event of events) {
      if (this.isErasure(event.type)) return undefined;
      if (sealedContentOf(event.data) !== undefined) continue;
      if (this.options.keyStream(event) === undefined) continue;
      if (splitContent(event.data).content !== undefined) return undefined;
    }
    return [...events];
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
    if (this.isErasure(event.type)) {
      this.options.keyring.forget(event.tenantId, event.streamName);
      return event;
    }
    const sealed = sealedContentOf(event.data);
    if (sealed === undefined) return event;
    if ('erased' in sealed) return erased(event);
    const keyStream = this.options.keyStream(event);
    if (keyStream === undefined) return erased(event);
    const key = await this.options.keyring.keyFor(event.tenantId, keyStream);
    return Buffer.isBuffer(key) ? opened(event, key, sealed, this.#opened) : erased(event);
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
      if (sealed === undefined || this.isErasure(event.type)) result.push(event);
      else if ('erased' in sealed) result.push(erased(event));
      else {
        const keyStream = this.options.keyStream(event);
        const key =
          keyStream === undefined ? undefined : this.options.keyring.cached(event.tenantId, keyStream);
        if (key === undefined) return undefined;
        result.push(opened(event, key, sealed, this.#opened));
      }
    }
    return result;
  }

  /** A snapshot's state sealed under its key stream's key; undefined when the key is destroyed (not saved). */
  async sealState(tenantId: string, streamName: string, name: string, state: unknown): Promise<unknown> {
    const keyStream = this.snapshotKeyStream(streamName);
    if (keyStream === undefined) return state;
    return this.sealValue(tenantId, keyStream, state, snapshotContext(tenantId, streamName, name));
  }

  /** A snapshot's state opened; undefined when its key is destroyed (the snapshot is then a miss). */
  async openState(tenantId: string, streamName: string, name: string, state: unknown): Promise<unknown> {
    const keyStream = this.snapshotKeyStream(streamName);
    if (keyStream === undefined) return sealedContentOf(state) === undefined ? state : undefined;
    return this.openValue(tenantId, keyStream, state, snapshotContext(tenantId, streamName, name));
  }

  /**
   * Any JSON value kept beside the log (a snapshot, a tool call's outcome) sealed under
   * `keyStream`'s key, bound to `context`; undefined when the key is destroyed (keep nothing).
   */
  async sealValue(tenantId: string, keyStream: string, value: unknown, context: string): Promise<unknown> {
    const key = await this.options.keyring.keyToWrite(tenantId, keyStream);
    if (!Buffer.isBuffer(key)) return undefined;
    return { [SEALED_FIELD]: sealText(key, JSON.stringify(value), context) };
  }

  /** A value sealed by `sealValue` opened (one never sealed as it is); undefined once its key is destroyed. */
  async openValue(tenantId: string, keyStream: string, value: unknown, context: string): Promise<unknown> {
    const sealed = sealedContentOf(value);
    if (sealed === undefined) return value;
    if ('erased' in sealed) return undefined;
    const key = await this.options.keyring.keyFor(tenantId, keyStream);
    if (!Buffer.isBuffer(key)) return undefined;
    return JSON.parse(openOrThrow(key, sealed, context, keyStream));
  }

  async #sealOne<E extends EventData>(tenantId: string, streamName: string, event: E): Promise<E> {
    if (this.isErasure(event.type) || sealedContentOf(event.data) !== undefined) return event;
    const keyStream = this.options.keyStream({ streamName, data: event.data });
    if (keyStream === undefined) return event;
    const { clear, content } = splitContent(event.data);
    if (content === undefined) return event;
    // The keyring remembers the key: one store round trip per key stream and process.
    const key: DataKey = await this.options.keyring.keyToWrite(tenantId, keyStream);
    const sealed: SealedContent = Buffer.isBuffer(key)
      ? sealText(key, JSON.stringify(content), eventContext(tenantId, streamName, event.type))
      : { erased: true };
    return { ...event, data: { ...clear, [SEALED_FIELD]: sealed } };
  }

  /** A batch holding a stream's erasure: forget that stream's key before opening anything of it. */
  #forgetErased(events: readonly RecordedEvent[]): void {
    for (const event of events) {
      if (this.isErasure(event.type)) this.options.keyring.forget(event.tenantId, event.streamName);
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
  contents: OpenedContents,
): RecordedEvent => {
  const context = eventContext(event.tenantId, event.streamName, event.type);
  const plaintext = contents.open(key, sealed, context, () =>
    openOrThrow(key, sealed, context, event.streamName),
  );
  const content = JSON.parse(plaintext) as Record<string, unknown>;
  return { ...event, data: joinContent(clearPartOf(event.data), content) };
};

const erased = (event: RecordedEvent): RecordedEvent => ({
  ...event,
  type: ERASED_EVENT_TYPE,
  data: { ...clearPartOf(event.data), erasedType: event.type },
});
