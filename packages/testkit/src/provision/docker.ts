import { mongoAnswersPing, natsHasJetStream } from './probes.js';
import type { Provisioned } from './server.js';
import { waitUntilReady } from './server.js';

/** True when a container engine answers within `timeoutMs`; set KEEL_TEST_DOCKER=0 to skip Docker. */
export async function dockerAvailable(timeoutMs = 2_000): Promise<boolean> {
  if (process.env.KEEL_TEST_DOCKER === '0') return false;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  const probe = (async () => {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await getContainerRuntimeClient();
      return true;
    } catch {
      return false;
    }
  })();
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** NATS 2.10 with JetStream in a throwaway container. */
export async function natsContainer(): Promise<Provisioned> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('nats:2.10')
    .withCommand(['-js'])
    .withExposedPorts(4222)
    .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
    .start();
  const url = `nats://${container.getHost()}:${container.getMappedPort(4222)}`;
  await waitUntilReady('NATS container', () => natsHasJetStream(url), undefined);
  return { url, source: 'Docker nats:2.10', stop: async () => void (await container.stop()) };
}

/** MongoDB 7 (standalone) in a throwaway container. */
export async function mongoContainer(): Promise<Provisioned> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('mongo:7')
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .start();
  const url = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/`;
  await waitUntilReady('MongoDB container', () => mongoAnswersPing(url), undefined);
  return {
    url,
    source: 'Docker mongo:7',
    backend: 'MongoDB 7',
    stop: async () => void (await container.stop()),
  };
}
