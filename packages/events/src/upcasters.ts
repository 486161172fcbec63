import type { RecordedEvent } from '@keel/core';
import { Upcasters } from '@keel/core';

/**
 * `UsageRecorded.at` (the instant of the model call) was added after events were recorded without
 * it; those read with the commit time, the closest instant the log kept.
 */
export const usageRecordedAt = (event: RecordedEvent): RecordedEvent => {
  const data = typeof event.data === 'object' && event.data !== null ? event.data : {};
  const at = 'at' in data ? data.at : undefined;
  if (typeof at === 'string' && Number.isFinite(Date.parse(at))) return event;
  return { ...event, data: { ...data, at: event.recordedAt } };
};

/** Every upcaster of Keel's events: what a reader applies so it sees each type in its current shape. */
export const eventUpcasters = (): Upcasters => new Upcasters().register('UsageRecorded', usageRecordedAt);
