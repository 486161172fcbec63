import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import type { McpSessionTarget } from './mcp-sessions.js';
import { McpSession, McpSessionPool } from './mcp-sessions.js';

/** A session over a client and transport that only record being closed (the pool's bookkeeping alone). */
const recordingSession = (closed: string[], name: string): McpSession =>
  new McpSession(
    { close: () => Promise.resolve(void closed.push(`${name}:client`)) } as unknown as Client,
    {
      terminateSession: () => Promise.resolve(void closed.push(`${name}:DELETE`)),
    } as unknown as StreamableHTTPClientTransport,
  );

const poolOf = (closed: string[]) => {
  let opened = 0;
  return new McpSessionPool<McpSessionTarget>(() =>
    Promise.resolve(recordingSession(closed, `s${++opened}`)),
  );
};

const target = { tenantId: 't1', url: 'https://mcp.example/mcp' };

describe('MCP session pool', () => {
  it('a discarded session is closed once the last call using it is done, and not handed out again', async () => {
    const closed: string[] = [];
    const pool = poolOf(closed);
    const [first, second] = await Promise.all([pool.acquire(target), pool.acquire(target)]);
    expect(second!.session).toBe(first!.session);
    first!.discard();
    expect(closed).toEqual([]);
    const third = await pool.acquire(target);
    expect(third.session).not.toBe(first!.session);
    expect(third.fresh).toBe(true);
    second!.release();
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toEqual(['s1:DELETE', 's1:client']);
    third.release();
    await pool.close();
    expect(closed).toEqual(['s1:DELETE', 's1:client', 's2:DELETE', 's2:client']);
  });

  it('a broken session is replaced at the next call; headers and tenant make different sessions', async () => {
    const closed: string[] = [];
    const pool = poolOf(closed);
    const first = await pool.acquire(target);
    first.release();
    first.session.client.onerror?.(new Error('stream dropped'));
    const next = await pool.acquire(target);
    expect(next.session).not.toBe(first.session);
    const other = await pool.acquire({ ...target, headers: { authorization: 'Bearer x' } });
    const otherTenant = await pool.acquire({ ...target, tenantId: 't2' });
    expect(new Set([next.session, other.session, otherTenant.session]).size).toBe(3);
    expect(pool.size).toBe(3);
    await pool.close();
    expect(closed).toHaveLength(8);
  });
});
