// A bad environment stops a start before anything listens, with a message naming the variable:
// `npm start` and a service started alone alike.
import { createServer } from 'node:net';
import { freePort, startProcess } from '@keel/testkit';
import { describe, expect, it } from 'vitest';

const startFails = async (entry: string, env: Record<string, string>) => {
  const port = await freePort();
  const handle = await startProcess({ name: 'bad-env', entry, env: { PORT: String(port), ...env } });
  const exit = await handle.waitForExit(30_000);
  const listening = await fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => true,
    () => false,
  );
  return { exit, output: handle.tail(20), listening };
};

describe('a bad environment stops the start', () => {
  it('npm start with a misspelt KEEL_* name exits 1 and suggests the right one', async () => {
    const result = await startFails('apps/dev/src/main.ts', { KEEL_AGENT_CONCURENCY: '4' });
    expect(result.exit).toEqual({ code: 1, signal: null });
    expect(result.output).toContain(
      'KEEL_AGENT_CONCURENCY is not a Keel setting (did you mean KEEL_AGENT_CONCURRENCY?)',
    );
    expect(result.listening).toBe(false);
  });

  it('a service started alone with a malformed value exits 1 naming it, without echoing a secret', async () => {
    const result = await startFails('services/agent/src/main.ts', {
      KEEL_AGENT_CONCURRENCY: 'lots',
      KEEL_MASTER_KEY: 'my-secret-master',
    });
    expect(result.exit).toEqual({ code: 1, signal: null });
    expect(result.output).toMatch(/KEEL_(AGENT_CONCURRENCY|MASTER_KEY) must be/);
    expect(result.output).not.toContain('my-secret-master');

    const port = await startFails('services/tools/src/main.ts', { TOOLS_GRPC_PORT: '70000' });
    expect(port.exit).toEqual({ code: 1, signal: null });
    expect(port.output).toContain('TOOLS_GRPC_PORT must be a port number from 1 to 65535, got "70000"');
  });

  it('npm start on a port in use exits 1 with one line naming the variable to change, HTTP and gRPC alike', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const services = ['GATEWAY', 'AGENT', 'TOOLS', 'AUDIT', 'PRICING'];
      const grpcPorts: Record<string, string> = {};
      for (const service of services) grpcPorts[`${service}_GRPC_PORT`] = String(await freePort());
      for (const [variable, extra] of [
        ['PORT', { PORT: String(port) }],
        ['AUDIT_GRPC_PORT', { PORT: String(await freePort()), AUDIT_GRPC_PORT: String(port) }],
      ] as const) {
        const handle = await startProcess({
          name: 'port-taken',
          entry: 'apps/dev/src/main.ts',
          env: { HOST: '127.0.0.1', GRPC_PORT: '', ...grpcPorts, ...extra },
        });
        expect(await handle.waitForExit(30_000)).toEqual({ code: 1, signal: null });
        expect(handle.stderrLines.filter((line) => line.trim() !== '')).toEqual([
          `${variable} ${port} is already in use on 127.0.0.1 (set ${variable} to another port)`,
        ]);
      }
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
