import { EventTooLargeError, ValidationError } from '../errors/index.js';
import type { EventData } from '../typing/index.js';
import { assertTenantId, parseStreamName, uuidv7 } from '../typing/index.js';
import type { ExpectedVersion } from './event-store.js';
import { COMMIT_SIZE_LIMIT_BYTES, EVENT_SIZE_LIMIT_BYTES } from './event-store.js';

/** An event checked and serialized once, ready for any adapter to write. */
export interface PreparedEvent {
  eventId: string;
  type: string;
  /** The payload as JSON text: any JSON survives storage this way (keys with `.`/`$`, big numbers). */
  dataJson: string;
  metadataJson: string;
}

const TYPE = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * UTF-8 size of a string without encoding it (a lone surrogate counts as its 3-byte replacement):
 * Node's native count, about ten times the speed of a loop over the characters in JS.
 */
const utf8Length = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Validates the arguments of an append and serializes its events; shared by every adapter. */
export const prepareAppend = (
  tenantId: string,
  streamName: string,
  events: EventData[],
  expectedVersion: ExpectedVersion,
): PreparedEvent[] => {
  assertTenantId(tenantId);
  parseStreamName(streamName);
  if (!Array.isArray(events) || events.length === 0) {
    throw new ValidationError('an append needs at least one event', { field: 'events' });
  }
  if (
    typeof expectedVersion === 'number' &&
    (!Number.isSafeInteger(expectedVersion) || expectedVersion < 0)
  ) {
    throw new ValidationError(`invalid expected version ${expectedVersion}`, { field: 'expectedVersion' });
  }
  let total = 0;
  const prepared = events.map((event, index) => {
    if (typeof event.type !== 'string' || !TYPE.test(event.type)) {
      throw new ValidationError(`events[${index}].type is not a valid event type`, {
        field: `events[${index}].type`,
      });
    }
    if (event.eventId !== undefined && !UUID.test(event.eventId)) {
      throw new ValidationError(`events[${index}].eventId must be a UUID`, {
        field: `events[${index}].eventId`,
      });
    }
    const dataJson = JSON.stringify(event.data ?? null);
    if (dataJson === undefined) {
      throw new ValidationError(`events[${index}].data is not JSON`, { field: `events[${index}].data` });
    }
    const metadataJson = JSON.stringify(event.metadata ?? {});
    const size = utf8Length(dataJson) + utf8Length(metadataJson) + event.type.length;
    if (size > EVENT_SIZE_LIMIT_BYTES) throw new EventTooLargeError(size, EVENT_SIZE_LIMIT_BYTES, 'event');
    total += size;
    return { eventId: event.eventId ?? uuidv7(), type: event.type, dataJson, metadataJson };
  });
  if (total > COMMIT_SIZE_LIMIT_BYTES) throw new EventTooLargeError(total, COMMIT_SIZE_LIMIT_BYTES, 'commit');
  return prepared;
};

/** Whether an append's expected version rules out the stream's actual one (true: refuse it, a concurrency conflict). */
export const versionMismatch = (expected: ExpectedVersion, actual: number): boolean => {
  switch (expected) {
    case 'any':
      return false;
    case 'no_stream':
      return actual !== 0;
    case 'exists':
      return actual === 0;
    default:
      return actual !== expected;
  }
};
