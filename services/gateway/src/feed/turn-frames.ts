import type { FeedFrame } from './feed-frames.js';

/** The events that end a turn. */
export const TERMINAL_EVENTS: ReadonlySet<string> = new Set([
  'turn.completed',
  'turn.failed',
  'turn.cancelled',
]);

/** The conversation version of a frame (`<version>` or `<version>.<seq>`). */
const versionOf = (frame: FeedFrame): number => Number(frame.id.split('.')[0]);

/** A frame data's `turnId`, `approvalId` or `toolCallId`, when its data is an object that has it. */
const field = (data: unknown, name: 'turnId' | 'approvalId' | 'toolCallId'): unknown =>
  typeof data === 'object' && data !== null ? Reflect.get(data, name) : undefined;

/**
 * The frames of one turn out of a conversation's feed, ending after its terminal event
 * (`turn.completed`, `turn.failed`, `turn.cancelled`). Frames of other turns are left out;
 * `approval.decided` names no turn, so it belongs to the turn whose `approval.required` carried
 * the same approval id, or (a policy's decision, asked of nobody) whose `tool.call` carried its
 * tool call id. Frames at or before version `skipThrough` (a client resuming with
 * `Last-Event-ID`) are read, so approvals are still attributed, but not yielded.
 */
export async function* turnFrames(
  frames: AsyncIterable<FeedFrame>,
  turnId: string,
  skipThrough = 0,
): AsyncGenerator<FeedFrame> {
  const approvals = new Set<unknown>();
  const calls = new Set<unknown>();
  for await (const frame of frames) {
    if (frame.event === 'approval.decided') {
      const { data } = frame;
      if (!approvals.has(field(data, 'approvalId')) && !calls.has(field(data, 'toolCallId'))) continue;
    } else if (field(frame.data, 'turnId') !== turnId) {
      continue;
    }
    if (frame.event === 'approval.required') approvals.add(field(frame.data, 'approvalId'));
    if (frame.event === 'tool.call') calls.add(field(frame.data, 'toolCallId'));
    if (versionOf(frame) > skipThrough) yield frame;
    if (TERMINAL_EVENTS.has(frame.event)) return;
  }
}
