import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { generateApiKey } from '@keel/gateway';

/** Where the dev mode keeps its admin key between starts when the store is persisted. */
export const DEV_KEY_FILE = '.keel/dev-key';

/** The dev admin key, and whether it will be the same on the next start. */
export interface DevKey {
  key: string;
  /** How the key was chosen, for the banner. */
  origin: 'KEEL_DEV_KEY' | 'file' | 'new-file' | 'ephemeral';
}

/**
 * The dev tenant's admin key: `KEEL_DEV_KEY` when set; else, on a persisted store, the one saved in
 * `.keel/dev-key` (made and saved, mode 0600, on the first start), so restarts print the same key;
 * else (in-memory store) a new key for this run only, since the tenant itself is gone at exit.
 */
export const resolveDevKey = async (options: {
  pinned: string | undefined;
  persisted: boolean;
  file?: string;
}): Promise<DevKey> => {
  if (options.pinned) return { key: options.pinned, origin: 'KEEL_DEV_KEY' };
  if (!options.persisted) return { key: generateApiKey(), origin: 'ephemeral' };
  const file = options.file ?? DEV_KEY_FILE;
  try {
    const saved = (await readFile(file, 'utf8')).trim();
    if (saved) return { key: saved, origin: 'file' };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = generateApiKey();
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return { key, origin: 'new-file' };
};
