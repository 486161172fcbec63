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

/**
 * Whether the caller of an RPC still waits for its answer: throws DEADLINE_EXCEEDED once the
 * call's deadline has passed, CANCELLED once the caller cancelled it, as grpc-js answers the
 * caller itself then (this error only says so to the code that was about to commit).
 *
 * The clock is read when asked, not a timer: under overload the event loop runs timers late, and
 * a check right before a commit must see a deadline that passed while the request waited for the
 * CPU or the store. No call (the caller is this process): always waiting.
 */
export const callerWaiting = (
  call: ServerCall | undefined,
  clock: () => number = Date.now,
): CallerWaiting => ({
  throwIfAborted: () => {
    if (!call) return;
    if (call.cancelled) {
      throw new RpcException({ code: status.CANCELLED, message: 'the caller cancelled the call' });
    }
    if (clock() >= deadlineMsOf(call)) {
      throw new RpcException({ code: status.DEADLINE_EXCEEDED, message: 'the call passed its deadline' });
    }
  },
});
