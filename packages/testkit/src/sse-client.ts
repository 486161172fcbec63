// A minimal SSE client for tests (the gateway's events feed and turn stream): frames parsed as they arrive, comments (heartbeats) kept apart.

/** One SSE frame, or a comment line (heartbeat). */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: unknown;
  comment?: string;
}

/** An open SSE response being read. */
export interface SseStream {
  response: Response;
  /** Every frame and comment so far, in arrival order. */
  frames: SseFrame[];
  /** The event frames (comments left out) so far. */
  events(): SseFrame[];
  /** Waits until an event frame matches `check`; returns the event frames up to it. */
  until(check: (frame: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame[]>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  /** Aborts the request (the client disconnects). */
  close(): void;
}

/** Sends the request and, on a 2xx event-stream answer, reads it; otherwise returns the plain response. */
export const openSse = async (url: string, init: RequestInit): Promise<SseStream> => {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  const frames: SseFrame[] = [];
  let ended: Promise<void> = Promise.resolve();
  if (response.ok && response.body) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    ended = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const frame: SseFrame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comment = line.slice(1).trim();
            else if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('event: ')) frame.event = line.slice(7);
            else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
          }
          frames.push(frame);
        }
      }
    })().catch(() => undefined);
  }
  const events = () => frames.filter((f) => f.comment === undefined);
  const until = async (check: (frame: SseFrame) => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = events();
      const index = got.findIndex(check);
      if (index >= 0) return got.slice(0, index + 1);
      if (Date.now() > deadline) throw new Error(`no matching frame in ${JSON.stringify(got)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { response, frames, events, until, ended, close: () => controller.abort() };
};
