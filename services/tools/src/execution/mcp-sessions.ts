import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/*
 * Kept MCP sessions. Invariants: a session is used only by calls of the tenant, server URL and
 * headers (credentials) it was opened with, so nothing one tenant sends shares a session with
 * another's; a session that broke (its transport reported an error or closed) or that a call
 * failed on for any reason but the server's own JSON-RPC answer is never handed out again; a
 * session is closed (DELETE, then the client) once idle for `idleMs`, and not handed out past
 * `maxAgeMs`. A server that forgot the session (restarted, expired it) answers 404 — or 400, as
 * the SDK's own servers do — without running the request, which is what makes a retry on a new
 * session safe (`sessionGone`).
 */

/** A connected client, and a way to fail the requests pending on it when its transport breaks. */
export class McpSession {
  readonly #pending = new Set<(error: Error) => void>();
  #broken = false;

  constructor(
    readonly client: Client,
    private readonly transport: StreamableHTTPClientTransport,
  ) {
    // The SDK reports a broken stream through onerror/onclose, not by rejecting the request.
    client.onerror = (error) => this.#break(error);
    client.onclose = () => this.#break(new Error('the connection closed'));
  }

  /** Whether the transport reported an error or closed: the session is not used again. */
  get broken(): boolean {
    return this.#broken;
  }

  /** `pending`, or a rejection as soon as the transport breaks. */
  async whileOpen<T>(pending: Promise<T>): Promise<T> {
    let reject: ((error: Error) => void) | undefined;
    const broken = new Promise<never>((_, fail) => {
      reject = fail;
    });
    this.#pending.add(reject!);
    try {
      return await Promise.race([pending, broken]);
    } finally {
      this.#pending.delete(reject!);
    }
  }

  async close(): Promise<void> {
    this.#broken = true;
    this.#pending.clear();
    await this.transport.terminateSession().catch(() => undefined);
    await this.client.close().catch(() => undefined);
  }

  /**
   * A response stream broke, or the connection: every request pending on the session fails now
   * rather than at its timeout. An HTTP error answer to one POST reaches its own request as a
   * rejection, so it fails no other; it still retires the session.
   */
  #break(error: Error): void {
    this.#broken = true;
    if (error instanceof StreamableHTTPError) return;
    for (const reject of this.#pending) reject(error);
  }
}

/** Whether a call failed because the server no longer knows the session (it ran nothing). */
export const sessionGone = (error: unknown): boolean =>
  error instanceof StreamableHTTPError && (error.code === 404 || error.code === 400);

/** Whom and where a session is for: only calls with the same key share it. */
export interface McpSessionTarget {
  tenantId?: string;
  url: string;
  headers?: Record<string, string>;
}

/** A session lent to one call; `release` gives it back, `discard` closes it for good. */
export interface McpSessionLease {
  session: McpSession;
  /** Opened for this call (not reused): a failure on it is not the server forgetting it. */
  fresh: boolean;
  release(): void;
  discard(): void;
}

/** Settings of the pool; the defaults suit production. */
export interface McpSessionPoolOptions {
  /** Idle time after which a session is closed (default 30 s). */
  idleMs?: number;
  /** Age after which a session is no longer handed out (default 5 min). */
  maxAgeMs?: number;
  /** Sessions kept at once (default 1,000); the longest idle ones are closed first. */
  capacity?: number;
  now?: () => number;
}

interface Entry {
  key: string;
  opening: Promise<McpSession>;
  openedAt: number;
  inFlight: number;
  idleTimer?: NodeJS.Timeout;
  /** Out of the pool: handed out no more, closed once no call uses it. */
  retired: boolean;
  closed: boolean;
}

/** The key of a target: its tenant, URL and a digest of its headers (the credentials stay out). */
const keyOf = (target: McpSessionTarget): string => {
  const headers = Object.entries(target.headers ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const digest = createHash('sha256').update(JSON.stringify(headers)).digest('base64url');
  return JSON.stringify([target.tenantId ?? '', target.url, digest]);
};

/** MCP sessions kept between calls, one per tenant, server URL and headers. */
export class McpSessionPool<Target extends McpSessionTarget = McpSessionTarget> {
  readonly #entries = new Map<string, Entry>();
  readonly #idleMs: number;
  readonly #maxAgeMs: number;
  readonly #capacity: number;
  readonly #now: () => number;

  constructor(
    private readonly open: (target: Target) => Promise<McpSession>,
    options: McpSessionPoolOptions = {},
  ) {
    this.#idleMs = options.idleMs ?? 30_000;
    this.#maxAgeMs = options.maxAgeMs ?? 300_000;
    this.#capacity = Math.max(1, options.capacity ?? 1_000);
    this.#now = options.now ?? Date.now;
  }

  /** Sessions open or opening now. */
  get size(): number {
    return this.#entries.size;
  }

  /** A session for `target`: the kept one when it is healthy and young enough, else a new one. */
  async acquire(target: Target): Promise<McpSessionLease> {
    const key = keyOf(target);
    let entry = this.#entries.get(key);
    // A stale one is retired; another call may have opened the next one meanwhile.
    if (entry && (await this.#stale(entry))) entry = this.#entries.get(key);
    let fresh = false;
    if (!entry || entry.retired) {
      entry = this.#add(key, target);
      fresh = true;
    }
    entry.inFlight++;
    clearTimeout(entry.idleTimer);
    const lent = entry;
    try {
      const session = await lent.opening;
      const discard = (): void => {
        lent.inFlight--;
        void this.#retire(lent);
      };
      return { session, fresh, release: () => this.#release(lent), discard };
    } catch (error) {
      lent.inFlight--;
      void this.#retire(lent);
      throw error;
    }
  }

  /** Closes every session, in use or not (the service stopping). */
  async close(): Promise<void> {
    const entries = [...this.#entries.values()];
    await Promise.all(entries.map((entry) => this.#retire(entry, true)));
  }

  async #stale(entry: Entry): Promise<boolean> {
    const session = await entry.opening.catch(() => undefined);
    const stale = !session || session.broken || this.#now() - entry.openedAt >= this.#maxAgeMs;
    if (stale) void this.#retire(entry);
    return stale || entry.retired;
  }

  #add(key: string, target: Target): Entry {
    if (this.#entries.size >= this.#capacity) {
      const idlest = [...this.#entries.values()].find((candidate) => candidate.inFlight === 0);
      if (idlest) void this.#retire(idlest);
    }
    const opening = this.open(target);
    const entry: Entry = { key, opening, openedAt: this.#now(), inFlight: 0, retired: false, closed: false };
    entry.opening.catch(() => undefined);
    this.#entries.set(key, entry);
    return entry;
  }

  #release(entry: Entry): void {
    entry.inFlight--;
    if (entry.retired && entry.inFlight === 0) void this.#closeOnce(entry);
    if (entry.retired || entry.inFlight > 0) return;
    // Replaced meanwhile (two calls found it stale at once): not kept twice.
    if (this.#entries.get(entry.key) !== entry) return void this.#retire(entry);
    // Most recently used last: the capacity check closes the first idle one.
    this.#entries.delete(entry.key);
    this.#entries.set(entry.key, entry);
    entry.idleTimer = setTimeout(() => void this.#retire(entry), this.#idleMs);
    entry.idleTimer.unref();
  }

  /** Takes the entry out of the pool; its session closes now when `force`, else once no call uses it. */
  #retire(entry: Entry, force = false): Promise<void> {
    clearTimeout(entry.idleTimer);
    if (this.#entries.get(entry.key) === entry) this.#entries.delete(entry.key);
    entry.retired = true;
    return force || entry.inFlight === 0 ? this.#closeOnce(entry) : Promise.resolve();
  }

  #closeOnce(entry: Entry): Promise<void> {
    if (entry.closed) return Promise.resolve();
    entry.closed = true;
    return entry.opening.then(
      (session) => session.close(),
      () => undefined,
    );
  }
}
