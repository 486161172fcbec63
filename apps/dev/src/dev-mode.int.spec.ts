// `npm start`: the five services in one process on the embedded store and bus.
import { SERVICE_NAMES } from '@keel/runtime';
import { freePort, startProcess } from '@keel/testkit';
import { describe, expect, it } from 'vitest';
import { healthCheck } from '@keel/runtime/testing';

describe('dev mode (npm start)', () => {
  it('runs all five services in one process, each on its own gRPC port, and stops cleanly on SIGTERM', async () => {
    const httpPort = await freePort();
    const grpcPorts = await Promise.all(SERVICE_NAMES.map(() => freePort()));
    const env: Record<string, string> = {
      MONGODB_URL: '',
      NATS_URL: '',
      PORT: String(httpPort),
      HOST: '127.0.0.1',
      GRPC_PORT: '',
    };
    SERVICE_NAMES.forEach(
      (service, index) => (env[`${service.toUpperCase()}_GRPC_PORT`] = String(grpcPorts[index])),
    );
    const handle = await startProcess({
      name: 'dev',
      entry: 'apps/dev/src/main.ts',
      env,
      readyLine: /dev mode ready/,
    });

    const readyLine = JSON.parse(await handle.waitForLine(/dev mode ready/)) as Record<string, unknown>;
    expect(readyLine).toMatchObject({ url: `http://127.0.0.1:${httpPort}`, store: 'memory', bus: 'memory' });
    const ready = handle.stdoutLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'ready');
    expect(ready.map((line) => line.service)).toEqual([...SERVICE_NAMES]);
    for (const [index, service] of SERVICE_NAMES.entries()) {
      const address = `127.0.0.1:${grpcPorts[index]}`;
      expect(ready[index]).toMatchObject({ service, grpcAddress: address });
      expect(await healthCheck(address, service)).toBe('SERVING');
    }
    expect((await fetch(`http://127.0.0.1:${httpPort}/readyz`)).status).toBe(200);

    expect(await handle.kill('SIGTERM', 15_000)).toEqual({ code: 0, signal: null });
    const steps = handle.stdoutLines
      .map((line) => (JSON.parse(line) as { step?: string }).step)
      .filter((step) => step !== undefined);
    // Each app stops first; the shared infrastructure closes once, after all of them.
    expect(steps.filter((step) => step === 'app-closed')).toHaveLength(5);
    expect(steps.slice(-4)).toEqual(['consumers-drained', 'outbox-flushed', 'connections-closed', 'exit']);
  });
});
