import { describe, expect, it } from 'vitest';
import { startProcess, testInfra } from './index.js';

const entry = 'packages/testkit/test/fixtures/report-env.ts';

describe('startProcess', () => {
  it('runs a TypeScript entry on the Node running the tests, with the infra env, args and extra env, and waits for its ready line', async () => {
    const proc = await startProcess({
      name: 'report-env',
      entry,
      args: ['a', 'b'],
      env: { EXTRA: 'x' },
      readyLine: /^ready$/,
    });
    expect(proc.pid).toBeGreaterThan(0);
    expect(proc.stdoutLines).toEqual([`nats=${testInfra().natsUrl}`, 'ready']);
    expect(await proc.waitForLine(/^extra=/, 5_000)).toBe(`extra=x args=a,b node=${process.version}`);
    expect(await proc.kill('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(proc.stdoutLines).toContain('stopping');
  });

  it('reports a SIGKILL and can start the same entry again', async () => {
    const first = await startProcess({ name: 'victim', entry, readyLine: /^ready$/ });
    expect(await first.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(() => process.kill(first.pid, 0)).toThrow();
    const second = await startProcess({ name: 'victim', entry, readyLine: /^ready$/ });
    expect(second.pid).not.toBe(first.pid);
    expect(second.exit).toBeUndefined();
  });

  it('fails with the exit status when the process exits before its ready line', async () => {
    await expect(
      startProcess({ name: 'crasher', entry, env: { EXIT_AT_ONCE: '3' }, readyLine: /^ready$/ }),
    ).rejects.toThrow(/crasher exited with code 3 before printing/);
  });

  it('fails with the output when the ready line does not come in time', async () => {
    await expect(
      startProcess({ name: 'never-ready', entry, readyLine: /^will never be printed$/, readyTimeoutMs: 500 }),
    ).rejects.toThrow(/never-ready: no line matching .* not within 500 ms. Last output:\n.*nats=/s);
  });
});
