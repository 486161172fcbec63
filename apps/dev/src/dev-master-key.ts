import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError, SecretBox } from '@keel/runtime';
import { DEV_KEY_FILE } from './dev-key.js';

/** Where the dev mode keeps the master key it made up: beside the dev key, `.keel/master-key`. */
export const devMasterKeyFile = (devKeyFile: string = DEV_KEY_FILE): string =>
  join(dirname(devKeyFile), 'master-key');

/** Where this run's master key came from, for the banner. */
export type DevMasterKeyOrigin = 'KEEL_MASTER_KEY' | 'file' | 'new-file' | 'ephemeral';

const BASE64_32_BYTES = /^[A-Za-z0-9+/]{43}=$/;

/**
 * Gives the dev mode a master key when `KEEL_MASTER_KEY` is unset, before any service reads it:
 * on a persisted store the one kept in `file` (made, mode 0600, on the first start), since the
 * store keeps secrets sealed with it (webhook secrets, provider keys) and a new key would leave
 * every one of them unopenable; on the in-memory store a new one, gone with the secrets at exit.
 */
export const ensureDevMasterKey = async (options: {
  persisted: boolean;
  file: string;
  env?: Record<string, string | undefined>;
}): Promise<DevMasterKeyOrigin> => {
  const env = options.env ?? process.env;
  if (env.KEEL_MASTER_KEY?.trim()) return 'KEEL_MASTER_KEY';
  if (!options.persisted) {
    env.KEEL_MASTER_KEY = SecretBox.generateKey();
    return 'ephemeral';
  }
  const saved = await readKey(options.file);
  if (saved !== undefined) {
    env.KEEL_MASTER_KEY = saved;
    return 'file';
  }
  const key = SecretBox.generateKey();
  await mkdir(dirname(options.file), { recursive: true });
  try {
    // `wx`: a second dev process starting at the same moment keeps the first one's key.
    await writeFile(options.file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    env.KEEL_MASTER_KEY = (await readKey(options.file)) ?? key;
    return 'file';
  }
  env.KEEL_MASTER_KEY = key;
  return 'new-file';
};

const readKey = async (file: string): Promise<string | undefined> => {
  let text: string;
  try {
    text = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (text === '') return undefined;
  if (!BASE64_32_BYTES.test(text)) {
    throw new ConfigError(
      'KEEL_MASTER_KEY',
      `kept in ${file} is not 32 bytes of base64: fix or remove the file`,
    );
  }
  return text;
};
