import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { eventually } from './eventually.js';
import { freePort } from './free-port.js';
import { mongoUrlFor } from './test-infra.js';
import { uniqueName } from './unique-name.js';

const SAFE = /^[A-Za-z][A-Za-z0-9_]{0,37}$/;

describe('uniqueName', () => {
  it('is a valid MongoDB database name and NATS stream/subject token', () => {
    for (const prefix of ['orders', 'event-store.int spec', '', '42', 'x'.repeat(100), 'ünïcode/$*>']) {
      const name = uniqueName(prefix);
      expect(name).toMatch(SAFE);
    }
  });

  it('keeps a readable prefix', () => {
    expect(uniqueName('event-store')).toMatch(/^event_store_[a-z0-9]{10}$/);
  });

  it('never repeats', () => {
    const names = new Set(Array.from({ length: 10_000 }, () => uniqueName('t')));
    expect(names.size).toBe(10_000);
  });
});

describe('mongoUrlFor', () => {
  it('adds the database to a URL without one', () => {
    expect(mongoUrlFor('db1', 'mongodb://127.0.0.1:27017')).toBe('mongodb://127.0.0.1:27017/db1');
    expect(mongoUrlFor('db1', 'mongodb://127.0.0.1:27017/')).toBe('mongodb://127.0.0.1:27017/db1');
  });

  it('replaces an existing database and keeps the query', () => {
    expect(mongoUrlFor('db2', 'mongodb://u:p%40ss@h1:1,h2:2/other?replicaSet=rs0&authSource=admin')).toBe(
      'mongodb://u:p%40ss@h1:1,h2:2/db2?replicaSet=rs0&authSource=admin',
    );
    expect(mongoUrlFor('db3', 'mongodb+srv://cluster.example.net?retryWrites=true')).toBe(
      'mongodb+srv://cluster.example.net/db3?retryWrites=true',
    );
  });

  it('rejects names MongoDB would refuse', () => {
    expect(() => mongoUrlFor('a.b', 'mongodb://h')).toThrow(/invalid MongoDB database name/);
    expect(() => mongoUrlFor('', 'mongodb://h')).toThrow(/invalid MongoDB database name/);
  });
});

describe('freePort', () => {
  it('returns a loopback port a server can listen on', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) =>
      server.once('error', reject).listen(port, '127.0.0.1', resolve),
    );
    expect(server.address()).toMatchObject({ port });
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('eventually', () => {
  it('retries until the assertion passes', async () => {
    let calls = 0;
    const result = await eventually(
      () => {
        calls++;
        expect(calls).toBe(3);
        return 'done';
      },
      { timeoutMs: 1_000, intervalMs: 1 },
    );
    expect(result).toBe('done');
  });

  it('rethrows the last failure after the timeout', async () => {
    await expect(eventually(() => expect(1).toBe(2), { timeoutMs: 50, intervalMs: 10 })).rejects.toThrow(
      /still failing after \d+ attempts/,
    );
  });
});
