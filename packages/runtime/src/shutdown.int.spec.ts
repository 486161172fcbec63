// SIGTERM handling of a service process: consumers finish their work before the outbox and the
// connections close, and a shutdown that hangs is cut off by SHUTDOWN_TIMEOUT_MS with exit 1.
import type { ProcessHandle } from '@keel/testkit';
import { freePort, startProcess } from '@keel/testkit';
import { describe, expect, it } from 'vitest';

const entry = 'packages/runtime/test/fixtures/fixture-service.ts';

/** The fixture on the embedded store and bus, whatever the test environment sets. */
const start = async (env: Record<string, string>): Promise<ProcessHandle> =>
  startProcess({
    name: 'fixture',
    entry,
    env: { MONGODB_URL: '', NATS_URL: '', GRPC_PORT: String(await freePort()), LOG_LEVEL: 'info', ...env },
    readyLine: /"msg":"ready"/,
  });

const messages = (handle: ProcessHandle): string[] =>
  handle.stdoutLines.flatMap((line) => {
    try {
      return [String((JSON.parse(line) as { msg?: unknown }).msg)];
    } catch {
      return [];
    }
  });

describe('SIGTERM', () => {
  it('lets a consumer finish the event in hand, then flushes the outbox and closes, and exits 0', async () => {
    const handle = await start({ FIXTURE_HANDLER_MS: '1500', SHUTDOWN_TIMEOUT_MS: '10000' });
    await handle.waitForLine(/fixture handler started/);
    const startedAt = Date.now();
    const exit = await handle.kill('SIGTERM', 15_000);
    const elapsed = Date.now() - startedAt;

    expect(exit, handle.tail()).toEqual({ code: 0, signal: null });
    expect(elapsed).toBeGreaterThan(500); // it waited for the handler
    expect(messages(handle).filter((msg) => msg.startsWith('shutdown') || msg.startsWith('fixture'))).toEqual(
      [
        'fixture handler started',
        'shutdown: signal received',
        'shutdown: health NOT_SERVING',
        'shutdown: gRPC server stopped accepting calls',
        'shutdown: application closed',
        'fixture handler finished',
        'shutdown: consumers drained',
        'shutdown: outbox flushed',
        'shutdown: connections closed',
        'shutdown: complete',
      ],
    );
  });

  it('exits 1 when the shutdown outlasts SHUTDOWN_TIMEOUT_MS', async () => {
    const handle = await start({ FIXTURE_HANG_ON_SHUTDOWN: '1', SHUTDOWN_TIMEOUT_MS: '700' });
    const startedAt = Date.now();
    const exit = await handle.kill('SIGTERM', 10_000);
    const elapsed = Date.now() - startedAt;

    expect(exit, handle.tail()).toEqual({ code: 1, signal: null });
    expect(elapsed).toBeGreaterThanOrEqual(650);
    expect(elapsed).toBeLessThan(5_000);
    expect(messages(handle)).toContain('shutdown: timed out; exiting with 1');
    expect(messages(handle)).not.toContain('shutdown: complete');
  });
});
