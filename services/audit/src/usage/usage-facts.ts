import type { RecordedEvent } from '@keel/core';
import { isEvent } from '@keel/core';
import type { FeedbackGiven, TurnStarted, UsageRecorded, UserMessageAdded } from '@keel/events';
import { turnIdOf } from '@keel/events';
import type { TurnInfo } from '../storage/audit-storage.js';
import type { Totals } from './usage-totals.js';
import { nanoUsd } from './usage-totals.js';

/** One model call's usage as the rollups count it. */
export interface UsageFact {
  tenantId: string;
  /** When it happened (UTC ms). */
  at: number;
  user: string;
  model: string;
  agent: string;
  totals: Totals;
}

/** Key of a turn in the turn index: `tenantId|turnId`. */
export const turnKey = (tenantId: string, turnId: string): string => `${tenantId}|${turnId}`;

/** The agent or user name used when the turn's start is not in the log the projection read. */
export const UNKNOWN = 'unknown';

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/**
 * What a conversation event tells the turn index: the acting user of a turn comes from the
 * message that started it (`UserMessageAdded`, metadata.actor.userId, else the key id); its agent
 * from `TurnStarted`. Both are fixed for the life of the turn.
 */
export const turnInfoOf = (event: RecordedEvent): { key: string; info: TurnInfo } | undefined => {
  const turnId = turnIdOf(event);
  if (turnId === undefined) return undefined;
  const key = turnKey(event.tenantId, turnId);
  if (isEvent<UserMessageAdded>(event, 'UserMessageAdded')) {
    const actor = event.metadata.actor ?? {};
    const user = actor.userId ?? actor.keyId;
    return user ? { key, info: { user } } : undefined;
  }
  if (isEvent<TurnStarted>(event, 'TurnStarted')) {
    const agentId: unknown = event.data.agent?.agentId;
    return typeof agentId === 'string' ? { key, info: { agent: agentId } } : undefined;
  }
  return undefined;
};

/**
 * The usage fact of a `UsageRecorded` event as read (upcast: `data.at` is set, the commit time for
 * events recorded before it existed), else undefined. Its instant is `data.at`. A turn is counted
 * once, at its first model call (step 1); cost null (unknown price) adds no cost.
 */
export const usageFactOf = (event: RecordedEvent, turn: TurnInfo | undefined): UsageFact | undefined => {
  if (!isEvent<UsageRecorded>(event, 'UsageRecorded')) return undefined;
  const { data } = event;
  const at = Date.parse(data.at);
  const actor = event.metadata.actor ?? {};
  return {
    tenantId: event.tenantId,
    at,
    user: turn?.user ?? actor.userId ?? actor.keyId ?? UNKNOWN,
    model: typeof data.model === 'string' && data.model ? data.model : UNKNOWN,
    agent: turn?.agent ?? UNKNOWN,
    totals: [
      num(data.promptTokens),
      num(data.completionTokens),
      nanoUsd(data.costUsd),
      data.step === 1 ? 1 : 0,
      1,
    ],
  };
};

/**
 * The usage fact of a `FeedbackGiven` event: +1 to the new rating's count and, when it replaces
 * another rating of the message, -1 to that one's, for the conversation's agent (no tokens, no
 * usage event: rows are listed for their model calls; the model key is UNKNOWN).
 */
export const feedbackFactOf = (event: RecordedEvent): UsageFact | undefined => {
  if (!isEvent<FeedbackGiven>(event, 'FeedbackGiven')) return undefined;
  const { rating, previous, agentId, at } = event.data;
  const delta = (r: string): number => (rating === r ? 1 : 0) - (previous === r ? 1 : 0);
  const actor = event.metadata.actor ?? {};
  return {
    tenantId: event.tenantId,
    at: Date.parse(at),
    user: actor.userId ?? actor.keyId ?? UNKNOWN,
    model: UNKNOWN,
    agent: agentId || UNKNOWN,
    totals: [0, 0, 0, 0, 0, delta('up'), delta('down')],
  };
};
