import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devMasterKeyFile, ensureDevMasterKey } from './dev-master-key.js';

describe('ensureDevMasterKey (the dev mode without KEEL_MASTER_KEY)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keel-master-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps it beside the dev key', () => {
    expect(devMasterKeyFile()).toBe(join('.keel', 'master-key'));
    expect(devMasterKeyFile('/x/dev-key')).toBe('/x/master-key');
  });

  it('uses KEEL_MASTER_KEY when set, and touches no file', async () => {
    const env = { KEEL_MASTER_KEY: 'given' };
    const file = join(dir, 'unused');
    expect(await ensureDevMasterKey({ persisted: true, file, env })).toBe('KEEL_MASTER_KEY');
    expect(env.KEEL_MASTER_KEY).toBe('given');
    await expect(stat(file)).rejects.toThrow();
  });

  it('makes one up per in-memory run, kept nowhere', async () => {
    const env: Record<string, string | undefined> = {};
    const file = join(dir, 'memory');
    expect(await ensureDevMasterKey({ persisted: false, file, env })).toBe('ephemeral');
    expect(Buffer.from(env.KEEL_MASTER_KEY ?? '', 'base64')).toHaveLength(32);
    await expect(stat(file)).rejects.toThrow();
  });

  it('on a persisted store makes one up once, mode 0600, and reads it back on the next start', async () => {
    const file = join(dir, 'kept', 'master-key');
    const first: Record<string, string | undefined> = { KEEL_MASTER_KEY: '' };
    expect(await ensureDevMasterKey({ persisted: true, file, env: first })).toBe('new-file');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file, 'utf8')).trim()).toBe(first.KEEL_MASTER_KEY);
    const second: Record<string, string | undefined> = {};
    expect(await ensureDevMasterKey({ persisted: true, file, env: second })).toBe('file');
    expect(second.KEEL_MASTER_KEY).toBe(first.KEEL_MASTER_KEY);
  });

  it('refuses a kept file that is not a key, naming the file', async () => {
    const file = join(dir, 'bad');
    await writeFile(file, 'not a key\n');
    await expect(ensureDevMasterKey({ persisted: true, file, env: {} })).rejects.toThrow(
      `KEEL_MASTER_KEY kept in ${file} is not 32 bytes of base64`,
    );
  });
});
