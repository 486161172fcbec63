import type { ConsumerConfig, JetStreamManager } from '@nats-io/jetstream';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/nats-core';
import type { ConsumerSettings } from '../bus/consumer-settings.js';
import { filterSubject } from './subjects.js';

const isApiError = (error: unknown, code: number): boolean =>
  error instanceof JetStreamApiError && error.code === code;

/** Creates the event stream, or updates its subjects and duplicate window; safe to run at every start. */
export const declareStream = async (
  jsm: JetStreamManager,
  stream: { name: string; subjectPrefix: string; duplicateWindowMs: number },
): Promise<void> => {
  const subjects = [`${stream.subjectPrefix}.>`];
  const duplicateWindow = nanos(stream.duplicateWindowMs);
  try {
    const { config } = await jsm.streams.info(stream.name);
    if (config.duplicate_window !== duplicateWindow || config.subjects.join() !== subjects.join()) {
      await jsm.streams.update(stream.name, { subjects, duplicate_window: duplicateWindow });
    }
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
    try {
      await jsm.streams.add({
        name: stream.name,
        subjects,
        storage: StorageType.File,
        duplicate_window: duplicateWindow,
      });
    } catch (addError) {
      // Another instance created it first with other settings: make ours win, as an update would.
      await jsm.streams.info(stream.name).catch(() => {
        throw addError;
      });
      await jsm.streams.update(stream.name, { subjects, duplicate_window: duplicateWindow });
    }
  }
};

/**
 * The JetStream settings of a durable. No server `backoff`: on nats-server 2.9 it replaces
 * `ack_wait` (the server then redelivers a delivery still being handled after backoff[0]), so the
 * backoff is a `nak(delay)`. No server `max_deliver`: the client dead-letters past `maxDeliver`
 * (see handleDelivery), so an event whose dead letter could not be stored is retried, not dropped.
 */
const consumerConfig = (settings: ConsumerSettings, subjectPrefix: string) => ({
  ack_policy: AckPolicy.Explicit,
  ack_wait: nanos(settings.ackWaitMs),
  max_ack_pending: settings.maxInFlight,
  max_deliver: -1,
  filter_subject: filterSubject(subjectPrefix, settings.filter),
});

/** Creates the durable pull consumer, or updates its settings to these; safe to run at every start. */
export const declareConsumer = async (
  jsm: JetStreamManager,
  streamName: string,
  subjectPrefix: string,
  settings: ConsumerSettings,
): Promise<void> => {
  const wanted = consumerConfig(settings, subjectPrefix);
  const update = async (): Promise<void> => {
    const { config } = await jsm.consumers.info(streamName, settings.name);
    const current = config as Partial<ConsumerConfig>;
    const differs = (Object.keys(wanted) as (keyof typeof wanted)[]).some(
      (key) => current[key] !== wanted[key],
    );
    if (differs) await jsm.consumers.update(streamName, settings.name, wanted);
  };
  try {
    await update();
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error;
    const deliverPolicy = settings.deliverFrom === 'all' ? DeliverPolicy.All : DeliverPolicy.New;
    try {
      await jsm.consumers.add(streamName, {
        ...wanted,
        durable_name: settings.name,
        deliver_policy: deliverPolicy,
      });
    } catch (addError) {
      // Another instance created it first (servers 2.10+ refuse a create with other settings).
      await update().catch(() => {
        throw addError;
      });
    }
  }
};
