import { describe, expect, it } from 'vitest';
import type { FeedFrame } from './feed-frames.js';
import { turnFrames } from './turn-frames.js';

const frame = (version: number, event: string, data: Record<string, unknown>): FeedFrame => ({
  id: String(version),
  event,
  data,
});

async function* feed(frames: FeedFrame[]): AsyncGenerator<FeedFrame> {
  yield* frames;
}

describe('turn frames', () => {
  it("keeps a turn's frames, a person's decision on its approval and a policy's decision on its call", async () => {
    const frames = [
      frame(1, 'turn.started', { turnId: 't1' }),
      frame(2, 'tool.call', { turnId: 't1', toolCallId: 'c1' }),
      frame(3, 'approval.decided', { approvalId: 'p1', toolCallId: 'c1', by: 'policy' }),
      frame(4, 'approval.decided', { approvalId: 'p9', toolCallId: 'c9', by: 'policy' }),
      frame(5, 'tool.call', { turnId: 't1', toolCallId: 'c2' }),
      frame(6, 'approval.required', { turnId: 't1', approvalId: 'a2', toolCallId: 'c2' }),
      frame(7, 'approval.decided', { approvalId: 'a2', by: 'ana' }),
      frame(8, 'turn.started', { turnId: 't2' }),
      frame(9, 'turn.completed', { turnId: 't1' }),
      frame(10, 'turn.completed', { turnId: 't2' }),
    ];
    const kept: string[] = [];
    for await (const f of turnFrames(feed(frames), 't1')) kept.push(f.id);
    expect(kept).toEqual(['1', '2', '3', '5', '6', '7', '9']);
  });
});
