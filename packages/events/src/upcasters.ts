import type { RecordedEvent } from '@keel/core';
import { Upcasters } from '@keel/core';

/**
 * `UsageRecorded.at` (the instant of the model call) was added after events were recorded without
 * it; those read with the commit time, the closest instant the log kept.
 */
export const usageRecordedAt = (event: RecordedEvent): RecordedEvent => {
  const data = (event.data ?? {}) as { at?: unknown };
  if (typeof data.at === 'string' && Number.isFinite(Date.parse(data.at))) return event;
  return { ...event, data: { ...data, at: event.recordedAt } };
};

/** Every upcaster of Keel's events: what a reader applies so it sees each type in its current shape. */
export const eventUpcasters = (): Upcasters => new Upcasters().register('UsageRecorded', usageRecordedAt);
