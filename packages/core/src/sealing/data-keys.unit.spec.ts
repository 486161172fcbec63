import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InMemoryEphemeralChannel } from '../bus/ephemeral.js';
import type { StoredDataKey } from './data-keys.js';
import { DataKeyring, InMemoryDataKeyStore } from './data-keys.js';

const TENANT = 'acme';
const STREAM = 'conversation-c1';

/** A key store shared by several processes' keyrings, counting the reads it answers. */
class CountingKeyStore extends InMemoryDataKeyStore {
  reads = 0;
  override get(tenantId: string, streamName: string): Promise<StoredDataKey | undefined> {
    this.reads += 1;
    return super.get(tenantId, streamName);
  }
}

/** Two processes (keyrings) over one key store, on one ephemeral channel, with a clock to move. */
const twoProcesses = (options: { connected: boolean }) => {
  const store = new CountingKeyStore();
  const master = randomBytes(32);
  const clock = { now: 1_000_000 };
  const channel = new InMemoryEphemeralChannel();
  const keyring = () => {
    const ring = new DataKeyring(store, master, { maxAgeMs: 60_000, now: () => clock.now });
    if (options.connected) ring.connect(channel);
    return ring;
  };
  return { store, clock, writer: keyring(), reader: keyring() };
};

describe('DataKeyring memory', () => {
  it('asks the store once per stream while the key is young, and again once it is maxAgeMs old', async () => {
    const { store, clock, writer, reader } = twoProcesses({ connected: true });
    const made = await writer.keyToWrite(TENANT, STREAM);
    const reads = store.reads;
    expect(await reader.keyFor(TENANT, STREAM)).toEqual(made);
    expect(await reader.keyFor(TENANT, STREAM)).toEqual(made);
    clock.now += 59_999;
    expect(reader.cached(TENANT, STREAM)).toEqual(made);
    expect(await reader.keyFor(TENANT, STREAM)).toEqual(made);
    expect(store.reads - reads).toBe(1);
    clock.now += 1;
    expect(reader.cached(TENANT, STREAM)).toBeUndefined();
    expect(await reader.keyFor(TENANT, STREAM)).toEqual(made);
    expect(store.reads - reads).toBe(2);
  });

  it('forgets a key destroyed by another process as soon as that is announced', async () => {
    const { writer, reader } = twoProcesses({ connected: true });
    await writer.keyToWrite(TENANT, STREAM);
    expect(Buffer.isBuffer(await reader.keyFor(TENANT, STREAM))).toBe(true);
    await writer.destroy(TENANT, STREAM);
    expect(reader.cached(TENANT, STREAM)).toBeUndefined();
    expect(await reader.keyFor(TENANT, STREAM)).toBe('destroyed');
  });

  it('without the announcement, opens with the remembered key no longer than maxAgeMs after reading it', async () => {
    const { clock, writer, reader } = twoProcesses({ connected: false });
    await writer.keyToWrite(TENANT, STREAM);
    expect(Buffer.isBuffer(await reader.keyFor(TENANT, STREAM))).toBe(true);
    await writer.destroy(TENANT, STREAM);
    clock.now += 30_000;
    expect(Buffer.isBuffer(await reader.keyFor(TENANT, STREAM))).toBe(true);
    clock.now += 30_000;
    expect(await reader.keyFor(TENANT, STREAM)).toBe('destroyed');
    // Destruction is final: remembered as such without asking again.
    clock.now += 10 * 60_000;
    expect(await reader.keyFor(TENANT, STREAM)).toBe('destroyed');
  });

  it('does not remember a key whose load began before it was forgotten', async () => {
    const { store, writer, reader } = twoProcesses({ connected: true });
    await writer.keyToWrite(TENANT, STREAM);
    const loading = reader.keyFor(TENANT, STREAM); // reads the store before the destruction
    reader.forget(TENANT, STREAM);
    expect(Buffer.isBuffer(await loading)).toBe(true);
    expect(reader.cached(TENANT, STREAM)).toBeUndefined();
    await store.destroy(TENANT, STREAM, 'now');
    expect(await reader.keyFor(TENANT, STREAM)).toBe('destroyed');
  });
});
