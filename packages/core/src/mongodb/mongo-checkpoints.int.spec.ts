import { mongoUrlFor, uniqueName } from '@keel/testkit';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoCheckpointStore, MongoLeaseStore } from './mongo-checkpoints.js';

describe('MongoDB checkpoints and leases', () => {
  const url = mongoUrlFor(uniqueName('ckpt'));
  let client: MongoClient;
  beforeAll(async () => {
    client = await new MongoClient(url).connect();
  });
  afterAll(async () => {
    await client.db().dropDatabase();
    await client.close();
  });

  it('a checkpoint starts at 0 and never moves backwards', async () => {
    const checkpoints = new MongoCheckpointStore(client.db());
    expect(await checkpoints.load('relay')).toBe(0);
    await checkpoints.save('relay', 40);
    await checkpoints.save('relay', 12);
    expect(await checkpoints.load('relay')).toBe(40);
    expect(await checkpoints.load('other')).toBe(0);
  });

  it('the holder keeps a short lease across windows without a gap; when it stops, another takes it', async () => {
    const leases = new MongoLeaseStore(client.db());
    const ttl = 300;
    const seen: Array<[boolean, boolean]> = [];
    const until = Date.now() + 1_200;
    while (Date.now() < until) {
      seen.push([
        await leases.tryAcquire('relay', 'holder', ttl),
        await leases.tryAcquire('relay', 'other', ttl),
      ]);
      await new Promise((r) => setTimeout(r, 40));
    }
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.every(([holder, other]) => holder && !other)).toBe(true);
    await new Promise((r) => setTimeout(r, 2 * ttl));
    expect(await leases.tryAcquire('relay', 'other', ttl)).toBe(true);
    expect(await leases.tryAcquire('relay', 'holder', ttl)).toBe(false);
  });

  it('one live lease at a time; it expires, and its owner may renew or release it', async () => {
    const leases = new MongoLeaseStore(client.db());
    const racers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => leases.tryAcquire('job', `p${i}`, 60_000)),
    );
    expect(racers.filter(Boolean)).toHaveLength(1);
    const holder = `p${racers.indexOf(true)}`;
    expect(await leases.tryAcquire('job', holder, 60_000)).toBe(true);
    expect(await leases.tryAcquire('job', 'intruder', 60_000)).toBe(false);
    await leases.release('job', 'intruder');
    expect(await leases.tryAcquire('job', 'intruder', 60_000)).toBe(false);
    await leases.release('job', holder);
    expect(await leases.tryAcquire('job', 'intruder', 50)).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(await leases.tryAcquire('job', holder, 60_000)).toBe(true);
  });

  it('checks within a window ask the server nothing once its owner is known (it cannot change before the window ends)', async () => {
    const monitored = await new MongoClient(url, { monitorCommands: true }).connect();
    try {
      const commands: string[] = [];
      monitored.on('commandStarted', (e) => commands.push(e.commandName));
      const [holder, other] = [new MongoLeaseStore(monitored.db()), new MongoLeaseStore(monitored.db())];
      const ttl = 600_000;
      expect(await holder.tryAcquire('cached', 'h', ttl)).toBe(true);
      expect(await other.tryAcquire('cached', 'o', ttl)).toBe(false);
      const learned = commands.length;
      expect(learned).toBeGreaterThan(0);
      for (let i = 0; i < 10; i++) {
        expect(await holder.tryAcquire('cached', 'h', ttl)).toBe(true);
        expect(await other.tryAcquire('cached', 'o', ttl)).toBe(false);
      }
      expect(commands.length).toBe(learned);
    } finally {
      await monitored.close();
    }
  });
});
