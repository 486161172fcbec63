import { ConcurrencyError, NotFoundError, streamName, ValidationError } from '@keel/core';
import type { EventMetadata, RecordedEvent } from '@keel/core';
import type { RunErased } from '@keel/events';
import { CONVERSATION_CATEGORY, RUN_CATEGORY } from '@keel/events';
import type { Infrastructure } from '@keel/runtime';
import { KEEL_INFRA } from '@keel/runtime';
import { Inject, Injectable } from '@nestjs/common';
import { childConversationsOf, decideDeletion, runOfConversation } from './conversation-deletion.js';

/** Appends lost to a concurrent writer (a turn still running) before the DELETE gives up. */
const MAX_ATTEMPTS = 5;

/** Who deletes, for the decision and the event's metadata. */
export interface Deleter {
  tenantId: string;
  keyId: string;
  metadata: EventMetadata;
}

/**
 * `DELETE /v1/conversations/{id}`: appends `ConversationDeleted` to the conversation's log (every
 * read and command answers 404 from then on: the agent's fold and the feed know it), then destroys
 * the conversation's data key and its snapshots (infrastructure `erasure`): the content sealed in
 * the log, snapshots, the tool ledger and the JetStream stream's retained messages can never be
 * opened again. Publishing the deletion destroys the key too (the sealing bus), so a gateway that
 * dies between the append and the destruction leaves it to the outbox relay.
 */
@Injectable()
export class ConversationEraser {
  constructor(@Inject(KEEL_INFRA) private readonly infra: Infrastructure) {}

  async delete(deleter: Deleter, conversationId: string): Promise<void> {
    const events = await this.#deleteOne(deleter, conversationId);
    const runId = runOfConversation(events);
    if (runId !== undefined) await this.#eraseRun(deleter, runId, conversationId);
    // Its sub-agents' conversations hold the tasks its calls gave them: they go with it.
    for (const child of childConversationsOf(events)) {
      await this.delete(deleter, child).catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) throw error;
      });
    }
  }

  /**
   * Erases the stream of the run a deleted conversation was a task of: appends `RunErased` (once
   * per conversation: its commit id; every process that reads it forgets the run's key) and
   * destroys the run's data key and snapshots. The run then reads as never started (404).
   */
  async #eraseRun(deleter: Deleter, runId: string, conversationId: string): Promise<void> {
    const stream = streamName(RUN_CATEGORY, runId);
    const event: RunErased = {
      type: 'RunErased',
      data: { runId, conversationId, by: deleter.keyId, at: new Date().toISOString() },
      metadata: deleter.metadata,
    };
    await this.infra.store.append(deleter.tenantId, stream, [event], {
      commitId: `runerased-${conversationId}`,
    });
    await this.infra.erasure.erase(deleter.tenantId, stream);
  }

  /** Appends the deletion (retrying a lost race), destroys the key; the events it decided on. */
  async #deleteOne(deleter: Deleter, conversationId: string): Promise<RecordedEvent[]> {
    const stream = conversationStream(conversationId);
    for (let attempt = 1; ; attempt += 1) {
      const events = await this.infra.store.read(deleter.tenantId, stream);
      const decision = decideDeletion(events, {
        conversationId,
        by: deleter.keyId,
        at: new Date().toISOString(),
        metadata: deleter.metadata,
      });
      try {
        await this.infra.store.append(deleter.tenantId, stream, [decision.event], {
          expectedVersion: decision.expectedVersion,
        });
        await this.infra.erasure.erase(deleter.tenantId, stream);
        return events;
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }
}

/** The conversation's stream; an id that cannot name one is an unknown conversation (404). */
export const conversationStream = (conversationId: string): string => {
  try {
    return streamName(CONVERSATION_CATEGORY, conversationId);
  } catch (error) {
    if (error instanceof ValidationError) throw new NotFoundError(`conversation ${conversationId} not found`);
    throw error;
  }
};
