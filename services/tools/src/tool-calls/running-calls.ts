/** Why a running call was aborted. */
export type AbortReason = 'turn-cancelled' | 'shutdown';

/** One running execution: its abort switch, and why it was pulled, once it was. */
export interface RunningCall {
  readonly controller: AbortController;
  reason?: AbortReason;
}

/** The calls this process is running, by tenant, conversation and turn, so a cancel signal finds them. */
export class RunningCalls {
  readonly #byTurn = new Map<string, Set<RunningCall>>();

  /** Registers a call of the turn; `release` it when it ends. */
  add(tenantId: string, conversationId: string, turnId: string): RunningCall {
    const turn = turnKey(tenantId, conversationId, turnId);
    const running: RunningCall = { controller: new AbortController() };
    let calls = this.#byTurn.get(turn);
    if (!calls) this.#byTurn.set(turn, (calls = new Set()));
    calls.add(running);
    return running;
  }

  release(tenantId: string, conversationId: string, turnId: string, running: RunningCall): void {
    const turn = turnKey(tenantId, conversationId, turnId);
    const calls = this.#byTurn.get(turn);
    calls?.delete(running);
    if (calls?.size === 0) this.#byTurn.delete(turn);
  }

  /** Aborts the turn's running calls (a cancel signal). */
  abortTurn(tenantId: string, conversationId: string, turnId: string): void {
    for (const running of this.#byTurn.get(turnKey(tenantId, conversationId, turnId)) ?? []) {
      abort(running, 'turn-cancelled');
    }
  }

  /** Aborts every running call (shutdown). */
  abortAll(): void {
    for (const calls of this.#byTurn.values()) for (const running of calls) abort(running, 'shutdown');
  }
}

const abort = (running: RunningCall, reason: AbortReason): void => {
  running.reason ??= reason;
  running.controller.abort(new Error(reason === 'shutdown' ? 'the service is stopping' : 'turn cancelled'));
};

const turnKey = (tenantId: string, conversationId: string, turnId: string): string =>
  JSON.stringify([tenantId, conversationId, turnId]);
