/** Headers of every event message besides `Nats-Msg-Id` (the event id); the body is the truth. */
export const KeelHeaders = {
  EventType: 'Keel-Event-Type',
  Tenant: 'Keel-Tenant',
  /** The stream name, percent-encoded (`encodeURIComponent`) so any name is a valid header value. */
  Stream: 'Keel-Stream',
  Version: 'Keel-Version',
  /** On a dead-letter replay: the one consumer that handles it; every other consumer acks it. */
  ReplayFor: 'Keel-Replay-For',
  /** On a dead-letter replay: the dead letter's id. */
  ReplayOf: 'Keel-Replay-Of',
} as const;
