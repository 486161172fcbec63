import { access, constants, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** The first executable named `name` on PATH, else the first of `fallbacks` that is an executable file. */
export async function findExecutable(name: string, fallbacks: string[] = []): Promise<string | undefined> {
  const onPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name));
  for (const candidate of [...onPath, ...fallbacks]) {
    if (await isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** True when `path` is a regular file we may execute. */
export async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
