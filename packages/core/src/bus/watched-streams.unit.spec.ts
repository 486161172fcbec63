import { describe, expect, it } from 'vitest';
import { InMemoryEventStore } from '../event-store/index.js';
import { InMemoryEventBus } from './in-memory-bus.js';
import { HeardVersions, WatchedStreams } from './watched-streams.js';

const silent = { warn: () => {}, error: () => {} };
const TENANT = 'tn_watch';
const STREAM = 'tenantconfig-tn_watch';

/** A store and bus where each append is published, as a writer's fast path does. */
const setup = (options: { maxAgeMs?: number; now?: () => number; capacity?: number } = {}) => {
  const store = new InMemoryEventStore();
  const bus = new InMemoryEventBus({ logger: silent });
  const watched = new WatchedStreams(bus, options);
  const append = async (streamName = STREAM, publish = true) => {
    const version = (await store.read(TENANT, streamName, { fromVersion: 1 })).length;
    const result = await store.append(TENANT, streamName, [{ type: 'Changed', data: {}, metadata: {} }], {
      expectedVersion: version === 0 ? 'no_stream' : version,
    });
    if (publish) await bus.publish(result.events);
    return result.nextExpectedVersion;
  };
  /** What a cache does to fill itself: watch, then read, then report the read. */
  const readVerified = async (streamName = STREAM) => {
    const mark = await watched.watch(TENANT, streamName);
    const events = await store.read(TENANT, streamName, { fromVersion: 1 });
    const version = events.at(-1)?.version ?? 0;
    watched.verified(TENANT, streamName, version, mark);
    return version;
  };
  return { store, bus, watched, append, readVerified };
};

describe('WatchedStreams', () => {
  it('vouches for a fold at the version a watched read found, and not for an older one', async () => {
    const { watched, append, readVerified } = setup();
    await append();
    await append();
    expect(watched.isCurrentAt(TENANT, STREAM, 2)).toBe(false); // never read while watched
    const version = await readVerified();
    expect(version).toBe(2);
    expect(watched.isCurrentAt(TENANT, STREAM, 2)).toBe(true);
    expect(watched.isCurrentAt(TENANT, STREAM, 1)).toBe(false);
  });

  it('stops vouching once another process publishes a newer event, until a fold reaches it', async () => {
    const { watched, append, readVerified } = setup();
    await append();
    await readVerified();
    await append(); // another process's change, published on the bus
    expect(watched.isCurrentAt(TENANT, STREAM, 1)).toBe(false);
    expect(watched.isCurrentAt(TENANT, STREAM, 2)).toBe(true); // a fold that has it
  });

  it('a read older than maxAgeMs vouches for nothing: a missed publish costs at most that', async () => {
    let clock = 1_000;
    const { watched, append, readVerified } = setup({ maxAgeMs: 500, now: () => clock });
    await readVerified();
    await append(STREAM, false); // committed, its publish lost
    expect(watched.isCurrentAt(TENANT, STREAM, 0)).toBe(true); // not known yet
    clock += 500;
    expect(watched.isCurrentAt(TENANT, STREAM, 0)).toBe(false);
    expect(await readVerified()).toBe(1);
    expect(watched.isCurrentAt(TENANT, STREAM, 1)).toBe(true);
  });

  it('a maxAgeMs of 0 never vouches (every lookup reads)', async () => {
    const { watched, readVerified } = setup({ maxAgeMs: 0 });
    await readVerified();
    expect(watched.isCurrentAt(TENANT, STREAM, 0)).toBe(false);
  });

  it('a mark of another stream or of a forgotten watch verifies nothing', async () => {
    const { watched, readVerified } = setup({ capacity: 1 });
    const mark = await watched.watch(TENANT, STREAM);
    watched.verified(TENANT, 'tenantdefaults-tn_watch', 0, mark);
    expect(watched.isCurrentAt(TENANT, 'tenantdefaults-tn_watch', 0)).toBe(false);
    await readVerified('tenantdefaults-tn_watch'); // capacity 1: the first watch is dropped
    watched.verified(TENANT, STREAM, 0, mark);
    expect(watched.isCurrentAt(TENANT, STREAM, 0)).toBe(false);
    expect(watched.isCurrentAt(TENANT, 'tenantdefaults-tn_watch', 0)).toBe(true);
  });

  it('with watches off on the bus it hands out no mark and vouches for nothing', async () => {
    const store = new InMemoryEventStore();
    const bus = new InMemoryEventBus({ logger: silent });
    const watched = new WatchedStreams(
      Object.assign(Object.create(bus) as InMemoryEventBus, { watching: false }),
    );
    expect(watched.enabled).toBe(false);
    const mark = await watched.watch(TENANT, STREAM);
    expect(mark).toBeUndefined();
    watched.verified(TENANT, STREAM, (await store.read(TENANT, STREAM, { fromVersion: 1 })).length, mark);
    expect(watched.isCurrentAt(TENANT, STREAM, 0)).toBe(false);
  });
});

describe('HeardVersions', () => {
  it('a wait ends true when its version (or a later one) is heard, false when it times out', async () => {
    const heard = new HeardVersions();
    const waiting = heard.waitFor(2, 1_000);
    const lost = heard.waitFor(5, 20);
    heard.hear(1);
    heard.hear(3);
    expect(await waiting).toBe(true);
    expect(await lost).toBe(false);
    expect(heard.heard).toBe(3);
    expect(await heard.waitFor(3, 0)).toBe(true);
    heard.hear(2); // an older one changes nothing
    expect(heard.heard).toBe(3);
  });

  it('close ends every wait', async () => {
    const heard = new HeardVersions();
    const waiting = heard.waitFor(9, 60_000);
    heard.close();
    expect(await waiting).toBe(true);
  });
});
