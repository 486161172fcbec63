import { freePort } from '../free-port.js';
import { findExecutable } from './executables.js';
import { natsHasJetStream, tcpOpen } from './probes.js';
import type { Provisioned } from './server.js';
import { spawnServer, waitUntilReady } from './server.js';

/** A JetStream NATS on loopback: the one already on `sharedPort` if it has JetStream, else a fresh nats-server. */
export async function localNats(sharedPort = 4222): Promise<Provisioned> {
  const sharedUrl = `nats://127.0.0.1:${sharedPort}`;
  if ((await tcpOpen('127.0.0.1', sharedPort)) && (await natsHasJetStream(sharedUrl))) {
    return { url: sharedUrl, source: `nats-server already on 127.0.0.1:${sharedPort}`, stop: async () => {} };
  }
  const bin = await findExecutable('nats-server', ['/usr/sbin/nats-server', '/usr/local/bin/nats-server']);
  if (!bin) {
    throw new Error(
      'No NATS for tests: set NATS_URL, start Docker, run nats-server -js on 127.0.0.1:4222, or install nats-server.',
    );
  }
  const port = await freePort();
  const server = await spawnServer('nats', bin, (dir) => [
    '-js',
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
    '-sd',
    dir,
  ]);
  const url = `nats://127.0.0.1:${port}`;
  try {
    await waitUntilReady(`nats-server (${bin})`, () => natsHasJetStream(url, 1_000), server, 15_000);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, source: `${bin} started on :${port}`, stop: () => server.stop() };
}
