import type {
  FakeChatRequest,
  FakeErrorReply,
  FakeMatcher,
  FakeReply,
  FakeStreamShape,
  FakeToolCall,
} from './types.js';
import { messageText } from './wire.js';

/** Short constructors for scripted replies, so a script reads like the conversation it fakes. */
export const fakeReply = {
  text: (text: string, shape: FakeStreamShape = {}): FakeReply => ({ kind: 'text', text, ...shape }),
  toolCall: (
    name: string,
    args: FakeToolCall['arguments'],
    shape: FakeStreamShape & { id?: string } = {},
  ) => {
    const { id, ...rest } = shape;
    return fakeReply.toolCalls([{ name, arguments: args, ...(id === undefined ? {} : { id }) }], rest);
  },
  toolCalls: (toolCalls: FakeToolCall[], shape: FakeStreamShape & { text?: string } = {}): FakeReply => ({
    kind: 'tool_calls',
    toolCalls,
    ...shape,
  }),
  error: (
    status: number,
    message?: string,
    extra: Omit<FakeErrorReply, 'kind' | 'status'> = {},
  ): FakeReply => ({
    kind: 'error',
    status,
    ...extra,
    ...(message === undefined ? {} : { message }),
  }),
  hang: (): FakeReply => ({ kind: 'hang' }),
};

/** Matches requests whose last user message contains `marker`. */
export function lastUserMessageIncludes(marker: string): FakeMatcher {
  return (request) => messageText(request.messages.findLast((m) => m.role === 'user')).includes(marker);
}

/** Matches requests whose system (or developer) prompt contains `marker`. */
export function systemPromptIncludes(marker: string): FakeMatcher {
  return (request) =>
    request.messages.some(
      (m) => (m.role === 'system' || m.role === 'developer') && messageText(m).includes(marker),
    );
}

interface KeyedQueue {
  matcher: FakeMatcher;
  replies: FakeReply[];
}

/** The scripted replies of one fake server: keyed queues first, in the order they were added, then the default queue. */
export class ReplyScript {
  private readonly queue: FakeReply[] = [];
  private readonly keyed: KeyedQueue[] = [];

  script(replies: Array<FakeReply | string>): void {
    this.queue.push(...replies.map(normalize));
  }

  on(matcher: FakeMatcher, replies: Array<FakeReply | string>): void {
    this.keyed.push({ matcher, replies: replies.map(normalize) });
  }

  /** The next reply for this request, removed from its queue; undefined when nothing is scripted for it. */
  take(request: FakeChatRequest): FakeReply | undefined {
    for (const entry of this.keyed) {
      if (entry.replies.length > 0 && entry.matcher(request)) return entry.replies.shift();
    }
    return this.queue.shift();
  }

  pending(): number {
    return this.keyed.reduce((sum, entry) => sum + entry.replies.length, this.queue.length);
  }

  clear(): void {
    this.queue.length = 0;
    this.keyed.length = 0;
  }
}

function normalize(reply: FakeReply | string): FakeReply {
  return typeof reply === 'string' ? { kind: 'text', text: reply } : reply;
}
