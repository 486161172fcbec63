import { NotFoundError, ValidationError } from '@keel/core';
import type { ToolCallKey, ToolOutcome } from './types.js';

/** What is known about a call when an attempt to execute it starts. */
export interface ToolCallAttemptMeta {
  conversationId: string;
  /** The tool's name. */
  name: string;
}

/** The ledger's memory of one tool call. */
export interface ToolCallRecord extends ToolCallKey, ToolCallAttemptMeta {
  /** `in-flight`: begun, no outcome yet (running, or its executor died); `completed`: final. */
  state: 'in-flight' | 'completed';
  /** When the first `begin` happened. */
  createdAt: Date;
  /** When the outcome was recorded. */
  completedAt?: Date;
  /** Set once, when the call completes; never replaced. */
  outcome?: ToolOutcome;
}

/** What `begin` found: `new` means the caller created the record and must execute the call. */
export interface BeginResult {
  state: 'new' | 'in-flight' | 'completed';
  record: ToolCallRecord;
}

/**
 * The exactly-once ledger of tool calls, keyed by (tenantId, toolCallId). `begin` is atomic: of any
 * number of concurrent callers exactly one sees `new`; the others see the in-flight record or the
 * completed outcome. The first `complete` wins; later ones return the stored outcome unchanged.
 */
export interface ToolCallLedger {
  begin(key: ToolCallKey, meta: ToolCallAttemptMeta): Promise<BeginResult>;
  /** Records the outcome; returns the record as stored (the first outcome if one was there). NotFoundError without `begin`. */
  complete(key: ToolCallKey, outcome: ToolOutcome): Promise<ToolCallRecord>;
  get(key: ToolCallKey): Promise<ToolCallRecord | undefined>;
}

/** Longest toolCallId accepted (the providers' ids are far shorter). */
export const MAX_TOOL_CALL_ID_LENGTH = 256;

/**
 * `${tenantId}|${toolCallId}`: one string, so a lookup is a point lookup. A tenant id holding `|`
 * would make two keys collide (`a|b`+`c` vs `a`+`b|c`), so it is refused.
 */
export const ledgerId = (key: ToolCallKey): string => {
  assertLedgerKey(key);
  return `${key.tenantId}|${key.toolCallId}`;
};

/** Refuses keys the ledger cannot store unambiguously. */
export const assertLedgerKey = (key: ToolCallKey): void => {
  if (typeof key.tenantId !== 'string' || key.tenantId === '' || key.tenantId.includes('|')) {
    throw new ValidationError('tenantId must be a non-empty string without "|"', { field: 'tenantId' });
  }
  if (
    typeof key.toolCallId !== 'string' ||
    key.toolCallId === '' ||
    key.toolCallId.length > MAX_TOOL_CALL_ID_LENGTH
  ) {
    throw new ValidationError(`toolCallId must be a string of 1 to ${MAX_TOOL_CALL_ID_LENGTH} characters`, {
      field: 'toolCallId',
    });
  }
};

/** The error `complete` raises for a call that was never begun. */
export const notBegun = (key: ToolCallKey): NotFoundError =>
  new NotFoundError(`tool call ${key.toolCallId} was never begun in the ledger`, {
    details: { toolCallId: key.toolCallId },
  });

/** The ledger for dev mode and unit tests: a Map, copies in and out. */
export class InMemoryToolCallLedger implements ToolCallLedger {
  readonly #records = new Map<string, ToolCallRecord>();
  readonly #now: () => Date;

  constructor(options: { now?: () => Date } = {}) {
    this.#now = options.now ?? (() => new Date());
  }

  async begin(key: ToolCallKey, meta: ToolCallAttemptMeta): Promise<BeginResult> {
    const id = ledgerId(key);
    const existing = this.#records.get(id);
    if (!existing) {
      const record: ToolCallRecord = {
        tenantId: key.tenantId,
        toolCallId: key.toolCallId,
        conversationId: meta.conversationId,
        name: meta.name,
        state: 'in-flight',
        createdAt: this.#now(),
      };
      this.#records.set(id, record);
      return { state: 'new', record: structuredClone(record) };
    }
    return { state: existing.state, record: structuredClone(existing) };
  }

  async complete(key: ToolCallKey, outcome: ToolOutcome): Promise<ToolCallRecord> {
    const existing = this.#records.get(ledgerId(key));
    if (!existing) throw notBegun(key);
    if (existing.state === 'in-flight') {
      existing.state = 'completed';
      existing.outcome = structuredClone(outcome);
      existing.completedAt = this.#now();
    }
    return structuredClone(existing);
  }

  async get(key: ToolCallKey): Promise<ToolCallRecord | undefined> {
    const existing = this.#records.get(ledgerId(key));
    return existing && structuredClone(existing);
  }
}
