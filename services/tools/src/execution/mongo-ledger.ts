import { UnavailableError } from '@keel/core';
import { isDuplicateKey } from '@keel/core/mongodb';
import type { Collection, Db } from 'mongodb';
import { ledgerId, notBegun } from './ledger.js';
import type { BeginResult, ToolCallAttemptMeta, ToolCallLedger, ToolCallRecord } from './ledger.js';
import type { ToolCallKey, ToolOutcome } from './types.js';

/** A begun tool call, in `<prefix>tool_calls`. Written once, never updated. */
export interface ToolCallDocument {
  /** `${tenantId}|${toolCallId}`: the primary key makes `begin` atomic without other indexes. */
  _id: string;
  tenantId: string;
  toolCallId: string;
  conversationId: string;
  name: string;
  createdAt: Date;
}

/** The outcome of a tool call, in `<prefix>tool_call_outcomes`. Written once, never updated. */
export interface ToolOutcomeDocument {
  /** The same key as the call's document. */
  _id: string;
  /**
   * The outcome as JSON text: a webhook's result is any JSON, and keys with `.` or `$` do not
   * survive as a sub-document everywhere.
   */
  outcome: string;
  completedAt: Date;
}

/**
 * How an outcome's JSON text is kept: sealed with its conversation's data key (the infrastructure's
 * `erasure.sealFor`), so deleting the conversation erases the results kept here too. `open`
 * answers undefined once the key is destroyed.
 */
export interface OutcomeSealing {
  seal(tenantId: string, conversationId: string, text: string): Promise<string | undefined>;
  open(tenantId: string, conversationId: string, stored: string): Promise<string | undefined>;
}

/** What an outcome whose conversation was deleted reads as (its result is gone). */
const ERASED_OUTCOME: ToolOutcome = {
  ok: false,
  error: { code: 'erased', message: 'the conversation was deleted' },
  attempts: 0,
  durationMs: 0,
};

/**
 * The production ledger on MongoDB or FerretDB 1.24. Both transitions are inserts that the `_id`
 * index lets succeed once: `begin` inserts the call, `complete` inserts its outcome; a duplicate
 * key means another caller was first, and its document is read back (only then: a first `begin`
 * and the `complete` after it are one round trip each). No update is ever used:
 * FerretDB 1.24 applies concurrent conditional updates of one document non-atomically (several
 * `updateOne({ _id, state: 'in-flight' })` all match, `$inc`s get lost — measured), which would let
 * a late completion overwrite the first outcome. No transactions, no change streams, no index
 * beyond `_id`.
 */
export class MongoToolCallLedger implements ToolCallLedger {
  readonly #calls: Collection<ToolCallDocument>;
  readonly #outcomes: Collection<ToolOutcomeDocument>;
  readonly #now: () => Date;
  readonly #sealing: OutcomeSealing | undefined;
  /**
   * The call documents this process began (or found begun), until their `complete`: a call's
   * document is written once and never changed or deleted, so this copy is what `complete` would
   * read back. Bounded; a call not here (begun elsewhere, or evicted) is read.
   */
  readonly #begun = new Map<string, ToolCallDocument>();

  constructor(
    db: Db,
    options: { collectionPrefix?: string; now?: () => Date; sealing?: OutcomeSealing } = {},
  ) {
    const prefix = options.collectionPrefix ?? '';
    this.#calls = db.collection<ToolCallDocument>(`${prefix}tool_calls`);
    this.#outcomes = db.collection<ToolOutcomeDocument>(`${prefix}tool_call_outcomes`);
    this.#now = options.now ?? (() => new Date());
    this.#sealing = options.sealing;
  }

  async begin(key: ToolCallKey, meta: ToolCallAttemptMeta): Promise<BeginResult> {
    const _id = ledgerId(key);
    const call: ToolCallDocument = {
      _id,
      tenantId: key.tenantId,
      toolCallId: key.toolCallId,
      conversationId: meta.conversationId,
      name: meta.name,
      createdAt: this.#now(),
    };
    try {
      await this.#calls.insertOne(call);
      this.#remember(call);
      return { state: 'new', record: toRecord(call) };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const record = await this.#read(_id);
    if (!record)
      throw new UnavailableError(`tool call ${key.toolCallId} is in the ledger but could not be read`);
    if (record.state === 'in-flight') this.#remember(documentOf(_id, record));
    return { state: record.state, record };
  }

  async complete(key: ToolCallKey, outcome: ToolOutcome): Promise<ToolCallRecord> {
    const _id = ledgerId(key);
    const call = this.#begun.get(_id) ?? (await this.#calls.findOne({ _id }));
    this.#begun.delete(_id);
    if (!call) throw notBegun(key);
    const text = JSON.stringify(outcome);
    const stored = this.#sealing ? await this.#sealing.seal(key.tenantId, call.conversationId, text) : text;
    const document: ToolOutcomeDocument = {
      _id,
      outcome: stored ?? JSON.stringify(ERASED_OUTCOME),
      completedAt: this.#now(),
    };
    try {
      await this.#outcomes.insertOne(document);
      return toRecord(call, { ...document, outcome: stored === undefined ? document.outcome : text });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    const first = await this.#outcomes.findOne({ _id });
    if (!first) throw new UnavailableError(`the outcome of tool call ${key.toolCallId} could not be read`);
    return toRecord(call, await this.#opened(call, first));
  }

  async get(key: ToolCallKey): Promise<ToolCallRecord | undefined> {
    return this.#read(ledgerId(key));
  }

  async #read(_id: string): Promise<ToolCallRecord | undefined> {
    // Calls and outcomes are never deleted and an outcome is only inserted after its call, so
    // reading both at once cannot produce an outcome without its call being there too.
    const [call, outcome] = await Promise.all([
      this.#calls.findOne({ _id }),
      this.#outcomes.findOne({ _id }),
    ]);
    if (!call) return undefined;
    return toRecord(call, outcome ? await this.#opened(call, outcome) : undefined);
  }

  #remember(call: ToolCallDocument): void {
    this.#begun.set(call._id, call);
    if (this.#begun.size > MAX_BEGUN) this.#begun.delete(this.#begun.keys().next().value!);
  }

  /** The outcome document with its text opened (the erased outcome once the conversation is deleted). */
  async #opened(call: ToolCallDocument, document: ToolOutcomeDocument): Promise<ToolOutcomeDocument> {
    if (!this.#sealing) return document;
    const text = await this.#sealing.open(call.tenantId, call.conversationId, document.outcome);
    return { ...document, outcome: text ?? JSON.stringify(ERASED_OUTCOME) };
  }
}

/** Calls begun here whose documents are kept for their `complete` (a call that never completes here is evicted). */
const MAX_BEGUN = 4096;

const documentOf = (_id: string, record: ToolCallRecord): ToolCallDocument => ({
  _id,
  tenantId: record.tenantId,
  toolCallId: record.toolCallId,
  conversationId: record.conversationId,
  name: record.name,
  createdAt: record.createdAt,
});

const toRecord = ({ _id: _key, ...call }: ToolCallDocument, outcome?: ToolOutcomeDocument): ToolCallRecord =>
  outcome
    ? {
        ...call,
        state: 'completed',
        completedAt: outcome.completedAt,
        outcome: JSON.parse(outcome.outcome) as ToolOutcome,
      }
    : { ...call, state: 'in-flight' };
