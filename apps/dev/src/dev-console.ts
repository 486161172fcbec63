// The operator console in the dev mode: `npm start` on a fresh clone has no console build yet
// (`npm run build` makes one), so the dev mode builds it once, with the console's own Vite. The
// console e2e test builds it the same way. Several starts at once (the dev-mode tests) may race:
// each builds into a folder of its own and renames it into place, so that the gateway never
// serves a half-written build.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root, from apps/dev/src or apps/dev/dist alike. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONSOLE_ROOT = join(ROOT, 'packages', 'console');

/** What the start did about the console: built it now, found a build, or could not build it. */
export interface ConsoleBuild {
  dir: string;
  built: boolean;
  error?: string;
}

/** Builds the console into `dir` unless `dir/index.html` is there; never throws (the gateway answers 503). */
export const ensureConsoleBuilt = async (dir: string): Promise<ConsoleBuild> => {
  const target = dir.replace(/[/\\]+$/, '');
  if (existsSync(join(target, 'index.html'))) return { dir, built: false };
  const staging = `${target}.build-${process.pid}-${Date.now()}`;
  const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  try {
    await promisify(execFile)(
      process.execPath,
      [vite, 'build', '--outDir', staging, '--emptyOutDir', '--logLevel', 'warn'],
      { cwd: CONSOLE_ROOT, timeout: 180_000 },
    );
    // Another start that got there first keeps its build (ENOTEMPTY): the same files.
    await rename(staging, target).catch(() => undefined);
    return { dir, built: true };
  } catch (error) {
    return {
      dir,
      built: false,
      error: error instanceof Error ? error.message.split('\n', 1)[0] : String(error),
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
};
