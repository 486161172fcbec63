import { status } from '@grpc/grpc-js';
import { RpcException } from '@nestjs/microservices';
import type { CallerWaiting } from '../conversation/conversation.service.js';

/** The part of a grpc-js server call (Nest's third handler argument) the check reads. */
export interface ServerCall {
  /** Set once the caller cancelled the call or its connection closed. */
  readonly cancelled: boolean;
  /** When the caller stops waiting: a Date, or a time in ms (Infinity: no deadline). */
  getDeadline(): Date | number;
}

const deadlineMsOf = (call: ServerCall): number => {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : deadline;
};

/** At most this much of a call's time is kept for answering a commit (see `callerWaiting`). */
export const ANSWER_MARGIN_MS = 1_000;

/**
 * Whether the caller of an RPC still waits for its answer: throws CANCELLED once the caller
 * cancelled the call, DEADLINE_EXCEEDED once too little of its deadline is left to commit and
 * be answered, as grpc-js answers the caller itself when the deadline passes.
 *
 * Too little: the last tenth of the time the call had left when its handler started, at most
 * ANSWER_MARGIN_MS
 * (the last second of the gateway's 10 s). A commit started later could land after the caller's
 * deadline, an outcome the caller cannot tell from a refusal; refused before it, the caller's
 * DEADLINE_EXCEEDED (the gateway's 503) means nothing was written, unless the commit and its
 * answer took longer than that margin.
 *
 * The clock is read when asked, not a timer: under overload the event loop runs timers late, and
 * a check right before a commit must see a deadline that passed while the request waited for the
 * CPU or the store. No call (the caller is this process): always waiting.
 */
export const callerWaiting = (
  call: ServerCall | undefined,
  clock: () => number = Date.now,
): CallerWaiting => {
  if (!call) return { throwIfAborted: () => undefined };
  const deadline = deadlineMsOf(call);
  const margin = Math.min(ANSWER_MARGIN_MS, Math.max(0, deadline - clock()) / 10);
  return {
    throwIfAborted: () => {
      if (call.cancelled) {
        throw new RpcException({ code: status.CANCELLED, message: 'the caller cancelled the call' });
      }
      if (clock() >= deadline - margin) {
        throw new RpcException({
          code: status.DEADLINE_EXCEEDED,
          message: "too little of the call's deadline is left to commit and answer",
        });
      }
    },
  };
};
