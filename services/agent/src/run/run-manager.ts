import type { Consumer, Delivery, EventBus, EventMetadata, EventStore, RecordedEvent } from '@keel/core';
import { ConflictError, NotFoundError, parseStreamName, streamName } from '@keel/core';
import type { ActorRole, ConversationEvent, TaskUsage } from '@keel/events';
import { CONVERSATION_CATEGORY, MAX_AGENT_DEPTH, RUN_CATEGORY, turnIdOf } from '@keel/events';
import type { KeelLogger } from '@keel/runtime';
import type { CallContext } from '../call-context.js';
import type { ConversationService } from '../conversation/conversation.service.js';
import { acceptedRequestOf } from '../grpc/accepted-request.js';
import { DeadlineAlarm } from '../deadlines/deadline-alarm.js';
import type { Deadlines } from '../deadlines/deadlines.js';
import { InMemoryDeadlines } from '../deadlines/deadlines.js';
import type { RunAction } from './run-policy.js';
import type { LiveUsage } from './run-policy.js';
import { nextActions, taskOutcomeOf, turnUsageOf } from './run-policy.js';
import type { RunService } from './run.service.js';
import { runStream } from './run.service.js';
import type { RunState, RunTaskState } from './run.state.js';
import { NO_USAGE, addUsage, hasEnded } from './run.state.js';
import { RUN_ID_KEY, TASK_ID_KEY, TaskLinks } from './task-links.js';

export { RUN_ID_KEY, TASK_ID_KEY } from './task-links.js';

/** How many runs' starting contexts are remembered. */
const REMEMBERED_RUNS = 1_000;

const TURN_ENDS: ReadonlySet<string> = new Set(['TurnCompleted', 'TurnFailed', 'TurnCancelled']);

/** The run id of a run stream's name (`run-<id>`). */
const runIdOfStream = (name: string): string => name.slice(RUN_CATEGORY.length + 1);

/** Dependencies of the run manager. */
export interface RunManagerDeps {
  store: EventStore;
  bus: EventBus;
  runs: RunService;
  conversations: ConversationService;
  logger: KeelLogger;
  /** Where running runs' deadlines (id: the run id) are kept across restarts (default: in memory). */
  deadlines?: Deadlines;
  clock?: () => string;
}

/**
 * The process manager of runs (the IO half of run-policy.ts): reacts to every run event by
 * asking the policy what is next and doing it, and to the end of a task's turn by recording the
 * task's outcome. Every step is keyed so that a redelivery, or another instance after a kill,
 * repeats nothing: a task's conversation and its turn are keyed by the task id (AcceptedRequest),
 * the run's decider starts a plan slot once and ends a task once.
 */
export class RunManager {
  private consumers: Consumer[] = [];
  private readonly clock: () => string;
  /** Wakes a run at its deadline, so a run with a stuck task still times out (after restarts too). */
  private readonly alarm: DeadlineAlarm;
  /** Which conversations are runs' tasks: each one's first event is read once. */
  private readonly links: TaskLinks;
  /** The context each run was started with (its first event's, which never changes), by tenant and run. */
  private readonly contexts = new Map<string, CallContext>();

  constructor(private readonly deps: RunManagerDeps) {
    this.clock = deps.clock ?? (() => new Date().toISOString());
    this.links = new TaskLinks(deps.store);
    this.alarm = new DeadlineAlarm({
      deadlines: deps.deadlines ?? new InMemoryDeadlines(),
      onDue: ({ tenantId, id }) => this.advance(tenantId, id),
      onError: ({ tenantId, id }, error) =>
        deps.logger.warn({ tenantId, runId: id, err: error }, 'the run deadline check failed'),
      clock: () => Date.parse(this.clock()),
    });
  }

  async start(): Promise<void> {
    const { bus } = this.deps;
    // Every run that had not ended when the last process stopped is woken at its deadline again.
    await this.alarm.start();
    this.consumers = [
      await bus.consume(
        {
          name: 'agent-run-manager',
          filter: { category: RUN_CATEGORY },
          idempotency: 'none',
          maxInFlight: 8,
        },
        (delivery) => this.onRunEvent(delivery),
      ),
      await bus.consume(
        {
          name: 'agent-run-tasks',
          filter: { category: CONVERSATION_CATEGORY },
          idempotency: 'none',
          maxInFlight: 16,
        },
        (delivery) => this.onConversationEvent(delivery),
      ),
    ];
  }

  async stop(): Promise<void> {
    this.alarm.stop();
    await Promise.all(this.consumers.map((c) => c.stop()));
    this.consumers = [];
  }

  private async onRunEvent({ event }: Delivery): Promise<void> {
    await this.advance(event.tenantId, runIdOfStream(event.streamName));
  }

  /** A task's turn ended: its outcome goes to the run (once; the decider drops a repeat). */
  private async onConversationEvent({ event }: Delivery): Promise<void> {
    if (event.type === 'UsageRecorded') {
      // A task's model call (or a sub-agent's under it) counts against maxSteps while its turn runs.
      const task = await this.links.taskOf(event.tenantId, event.streamName, MAX_AGENT_DEPTH);
      if (task) await this.advance(event.tenantId, task.runId);
      return;
    }
    if (!TURN_ENDS.has(event.type)) return;
    // Most conversations are no run's task: their first event says so, without reading the rest.
    const task = await this.links.taskOf(event.tenantId, event.streamName);
    if (!task) return;
    const events = (await this.deps.store.read(event.tenantId, event.streamName, {
      toVersion: event.version,
    })) as unknown as Array<RecordedEvent & ConversationEvent>;
    const turnId = turnIdOf(event);
    const { runId } = task;
    // A conversation a debate member continues holds several tasks' turns: the turn's own task.
    const state = await this.runOf(event.tenantId, runId);
    // A run erased (a member conversation deleted) has no task outcome left to record.
    if (!state) return;
    const taskId =
      state.tasks.find(
        (t) =>
          t.conversationId === parseStreamName(event.streamName).id &&
          turnOfTask(events, t.taskId) === turnId,
      )?.taskId ?? task.taskId;
    const turn = events.filter((e) => turnIdOf(e) === turnId);
    const outcome = taskOutcomeOf({ taskId }, turn, this.clock());
    if (!outcome || !('usage' in outcome)) return;
    // The model calls of the sub-agents its turn ran (a hierarchical manager's members) are the task's too.
    const usage = addUsage(outcome.usage, await this.delegatedUsage(event.tenantId, turn));
    await this.deps.runs.apply(event.tenantId, runId, { ...outcome, usage }, causedBy(event));
  }

  /** The usage of the sub-agent conversations a turn's calls ran, and of theirs down the chain. */
  private async delegatedUsage(tenantId: string, turn: readonly RecordedEvent[]): Promise<TaskUsage> {
    let usage = NO_USAGE;
    for (const event of turn) {
      const child = (event.data as { childConversationId?: unknown }).childConversationId;
      if (event.type !== 'ToolCallRequested' || typeof child !== 'string') continue;
      const events = await this.deps.store.read(tenantId, streamName(CONVERSATION_CATEGORY, child));
      const own = turnUsageOf(events as unknown as ConversationEvent[]);
      usage = addUsage(usage, addUsage(own, await this.delegatedUsage(tenantId, events)));
    }
    return usage;
  }

  /** Model calls the run's running tasks have made so far (their turns' usage events), and how many turns are still open. */
  private async liveUsage(tenantId: string, state: RunState): Promise<LiveUsage> {
    let modelCalls = 0;
    let open = 0;
    for (const task of state.tasks.filter((t) => t.status === 'running')) {
      const events = await this.deps.store.read(
        tenantId,
        streamName(CONVERSATION_CATEGORY, task.conversationId),
      );
      // The task's own turn (a debate member's conversation holds its earlier rounds' too).
      const turnId = turnOfTask(events, task.taskId);
      const ofTurn = turnId === undefined ? [] : events.filter((e) => turnIdOf(e) === turnId);
      modelCalls += turnUsageOf(ofTurn as unknown as ConversationEvent[]).modelCalls;
      modelCalls += (await this.delegatedUsage(tenantId, ofTurn)).modelCalls;
      if (!ofTurn.some((e) => TURN_ENDS.has(e.type))) open += 1;
    }
    return { modelCalls, open };
  }

  /** Does what the run needs now: cascade its end, or start its ready tasks, or end it. */
  async advance(tenantId: string, runId: string): Promise<void> {
    const state = await this.runOf(tenantId, runId);
    if (!state) return;
    const ctx = await this.contextOf(tenantId, runId);
    if (hasEnded(state)) {
      await this.alarm.clear(tenantId, runId);
      await Promise.all(
        state.tasks.filter((t) => t.status === 'cancelled').map((t) => this.cancelTurn(ctx, t)),
      );
      return;
    }
    if (!this.alarm.isArmed(tenantId, runId)) {
      await this.alarm.set({ tenantId, id: runId, dueAt: state.deadlineAt });
    }
    // A task recorded as started whose turn was never submitted (a kill in between) is submitted now.
    for (const task of state.tasks.filter((t) => t.status === 'running'))
      await this.submit(ctx, task.taskId, task.conversationId, task.input);
    const live = await this.liveUsage(tenantId, state);
    for (const action of nextActions(state, this.clock(), live)) await this.act(ctx, runId, action);
  }

  /** The run's state; undefined when it is not found (never started, or erased). */
  private async runOf(tenantId: string, runId: string): Promise<RunState | undefined> {
    try {
      return await this.deps.runs.get(tenantId, runId);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  private async act(ctx: CallContext, runId: string, action: RunAction): Promise<void> {
    const metadata = { correlationId: ctx.correlationId };
    if (action.type !== 'StartTask') {
      await this.deps.runs.apply(ctx.tenantId, runId, { ...action, at: this.clock() }, metadata);
      return;
    }
    const { type: _type, delegates, conversationId: continued, ...task } = action;
    // A debate member's later round continues its conversation; every other task begins one.
    const conversationId =
      continued ??
      (
        await this.deps.conversations.create(
          ctx,
          {
            agentId: task.agentId,
            title: `${task.role} — ${runId}`,
            metadata: { [RUN_ID_KEY]: runId, [TASK_ID_KEY]: task.taskId },
            ...(delegates ? { delegates } : {}),
          },
          acceptedRequestOf('CreateConversation', `run:${task.taskId}`, { agentId: task.agentId }),
        )
      ).id;
    await this.deps.runs.apply(
      ctx.tenantId,
      runId,
      { type: 'StartTask', ...task, conversationId, at: this.clock() },
      metadata,
    );
    await this.submit(ctx, task.taskId, conversationId, task.input);
  }

  /** Submits a task's input as its conversation's turn, keyed by the task: a repeat is the same turn. */
  private async submit(
    ctx: CallContext,
    taskId: string,
    conversationId: string,
    input: string,
  ): Promise<void> {
    await this.deps.conversations.send(
      ctx,
      conversationId,
      { content: input },
      acceptedRequestOf('SubmitMessage', `run:${taskId}`, { content: input }),
    );
  }

  private async cancelTurn(ctx: CallContext, task: RunTaskState): Promise<void> {
    try {
      await this.deps.conversations.cancel(
        ctx,
        task.conversationId,
        acceptedRequestOf('CancelTurn', `run:${task.taskId}`, {}),
      );
    } catch (error) {
      // No running turn (it ended meanwhile, or was cancelled by a previous delivery): nothing to do.
      if (!(error instanceof ConflictError) && !(error instanceof NotFoundError)) throw error;
    }
  }

  /** The context the run was started with: its actions are the starter's, in its correlation. */
  private async contextOf(tenantId: string, runId: string): Promise<CallContext> {
    const key = `${tenantId}\u0000${runId}`;
    const known = this.contexts.get(key);
    if (known) return known;
    const [first] = await this.deps.store.read(tenantId, runStream(runId), { toVersion: 1 });
    const actor = first?.metadata.actor;
    const ctx: CallContext = {
      tenantId,
      keyId: actor?.keyId ?? 'run-manager',
      role: (actor?.role ?? 'editor') as ActorRole,
      userId: actor?.userId ?? actor?.keyId ?? 'run-manager',
      correlationId: first?.metadata.correlationId ?? runId,
    };
    if (!first) return ctx;
    this.contexts.set(key, ctx);
    if (this.contexts.size > REMEMBERED_RUNS) this.contexts.delete(this.contexts.keys().next().value!);
    return ctx;
  }
}

/** The turn a task's submit started in its conversation (its message keyed by the task), if submitted yet. */
const turnOfTask = (events: readonly RecordedEvent[], taskId: string): string | undefined => {
  const key = acceptedRequestOf('SubmitMessage', `run:${taskId}`, {})?.key;
  const message = events.find(
    (e) => e.type === 'UserMessageAdded' && (e.data as { request?: { key?: string } }).request?.key === key,
  );
  return message ? turnIdOf(message) : undefined;
};

const causedBy = (event: RecordedEvent): EventMetadata => ({
  causationId: event.eventId,
  ...(event.metadata.correlationId ? { correlationId: event.metadata.correlationId } : {}),
});
