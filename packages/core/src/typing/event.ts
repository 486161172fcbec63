/** Who caused an event: the key, its role, and the acting end user (X-Keel-User). */
export interface Actor {
  keyId?: string;
  role?: string;
  userId?: string;
}

/** Metadata carried by every event: correlation and causation for tracing, the actor for audit. */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  actor?: Actor;
  /** Extra string attributes (e.g. turnId) that consumers may filter on. */
  [key: string]: unknown;
}

/** An event as a decider produces it, before the store gives it an id, a version and a position. */
export interface EventData<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  metadata?: EventMetadata;
  /** Optional caller-chosen id (UUID); the store generates a UUIDv7 when absent. */
  eventId?: string;
}

/** An event as the log holds it. */
export interface RecordedEvent<Type extends string = string, Data = unknown> {
  eventId: string;
  type: Type;
  data: Data;
  metadata: EventMetadata;
  tenantId: string;
  streamName: string;
  /** 1-based position of the event in its stream. */
  version: number;
  /** Position in the global log; absent until the sequencer has placed the commit. */
  globalPosition?: number;
  commitId: string;
  /** ISO-8601 time of the commit. */
  recordedAt: string;
}

/** Narrows a recorded event union member by its type. */
export type EventOfType<E extends EventData, T extends E['type']> = Extract<E, { type: T }>;

/**
 * Narrows a recorded event to one event type of a union, instead of casting its data:
 * `if (isEvent<ToolCallExecuted>(event, 'ToolCallExecuted')) event.data.ok`.
 */
export const isEvent = <E extends EventData>(event: EventData, type: E['type']): event is E =>
  event.type === type;
