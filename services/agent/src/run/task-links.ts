import type { EventStore } from '@keel/core';
import { streamName } from '@keel/core';
import { CONVERSATION_CATEGORY } from '@keel/events';

/** Metadata keys a task's conversation carries: which run and task its turn is. */
export const RUN_ID_KEY = 'keel_run_id';
export const TASK_ID_KEY = 'keel_task_id';

/** The run and task a conversation's turn is. */
export interface TaskLink {
  runId: string;
  taskId: string;
}

/** What a conversation's creation says about runs: it is a task, or a sub-agent of another conversation, or neither. */
type CreationLink = { task: TaskLink } | { parentStream: string } | { none: true };

/** How many conversations' links are remembered; default of `TaskLinks`. */
const REMEMBERED_CONVERSATIONS = 10_000;

/**
 * Which run's task a conversation is, read from its first event (ConversationCreated: its
 * metadata's RUN_ID_KEY and TASK_ID_KEY, its parent link) and remembered, so the run manager
 * reads a conversation's first event once, not on every usage event and turn end.
 *
 * Invariant that makes remembering exact, "not a task" included: the link is the creation's,
 * written once in the stream's first event, which never changes (a later PATCH of the metadata
 * is a ConversationUpdated this never read); a parent's link is its own creation's, older than
 * the child. A deleted conversation's first event reads erased (no link): a link remembered from
 * before stays, and its run is erased with it (the run then reads as not found).
 */
export class TaskLinks {
  /** By tenant and stream, least recently used first; a pending read is shared by concurrent lookups. */
  private readonly links = new Map<string, Promise<CreationLink | undefined>>();

  constructor(
    private readonly store: EventStore,
    private readonly capacity = REMEMBERED_CONVERSATIONS,
  ) {}

  /**
   * The run and task `stream` is, if it is a task; with `above` levels, also the task a sub-agent
   * conversation runs under (up its parent links).
   */
  async taskOf(tenantId: string, stream: string, above = 0): Promise<TaskLink | undefined> {
    const link = await this.linkOf(tenantId, stream);
    if (!link || 'none' in link) return undefined;
    if ('task' in link) return link.task;
    if (above <= 0) return undefined;
    return this.taskOf(tenantId, link.parentStream, above - 1);
  }

  private async linkOf(tenantId: string, stream: string): Promise<CreationLink | undefined> {
    const key = `${tenantId}\u0000${stream}`;
    let link = this.links.get(key);
    if (link) {
      this.links.delete(key);
    } else {
      link = this.read(tenantId, stream);
    }
    this.links.set(key, link);
    if (this.links.size > this.capacity) this.links.delete(this.links.keys().next().value!);
    const forget = () => {
      if (this.links.get(key) === link) this.links.delete(key);
    };
    try {
      const found = await link;
      // A stream without its creation yet (never for a delivered event's own stream) is asked again next time.
      if (!found) forget();
      return found;
    } catch (error) {
      forget();
      throw error;
    }
  }

  private async read(tenantId: string, stream: string): Promise<CreationLink | undefined> {
    const [created] = await this.store.read(tenantId, stream, { toVersion: 1 });
    if (!created) return undefined;
    const data = created.data as
      { metadata?: Record<string, string>; parent?: { conversationId: string } } | undefined;
    const runId = data?.metadata?.[RUN_ID_KEY];
    const taskId = data?.metadata?.[TASK_ID_KEY];
    if (runId && taskId) return { task: { runId, taskId } };
    if (data?.parent) return { parentStream: streamName(CONVERSATION_CATEGORY, data.parent.conversationId) };
    return { none: true };
  }
}
