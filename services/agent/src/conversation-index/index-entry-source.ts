import type { ConversationService } from '../conversation/conversation.service.js';
import type { Conversation } from '../conversation/conversation.state.js';
import type { IndexEntrySource, VersionedEntry } from './conversation-index.projection.js';

/** What the index keeps of a conversation at `version`; undefined when it does not exist (never created, or deleted). */
export const indexEntryOf = (
  tenantId: string,
  conversationId: string,
  state: Conversation,
  version: number,
): VersionedEntry | undefined =>
  state.status === 'new'
    ? undefined
    : {
        tenantId,
        conversationId,
        agentId: state.agentId,
        ...(state.title ? { title: state.title } : {}),
        createdAt: state.createdAt,
        ...(state.userId ? { userId: state.userId } : {}),
        ...(state.metadata ? { metadata: state.metadata } : {}),
        status: state.status,
        version,
      };

/**
 * The index projection's entries from the conversation service's handler: the state it holds,
 * when that is at the asked version or a later one (no read), or its load (the log after what it
 * holds).
 */
export const indexEntrySource = (conversations: ConversationService): IndexEntrySource => ({
  remembered: (tenantId, conversationId, version) => {
    const held = conversations.handler.remembered(tenantId, conversations.stream(conversationId));
    return held && held.version >= version
      ? indexEntryOf(tenantId, conversationId, held.state, held.version)
      : undefined;
  },
  load: async (tenantId, conversationId) => {
    const { state, version } = await conversations.handler.load(
      tenantId,
      conversations.stream(conversationId),
    );
    return indexEntryOf(tenantId, conversationId, state, version);
  },
});
