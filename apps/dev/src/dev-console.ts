// The operator console in the dev mode: `npm start` on a fresh clone has no console build yet
// (`npm run build` makes one), so the dev mode builds it once, with the console's own Vite.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root, from apps/dev/src or apps/dev/dist alike. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** What the start did about the console: built it now, found a build, or could not build it. */
export interface ConsoleBuild {
  dir: string;
  built: boolean;
  error?: string;
}

/** Builds the console into `dir` unless `dir/index.html` is there; never throws (the gateway answers 503). */
export const ensureConsoleBuilt = async (dir: string): Promise<ConsoleBuild> => {
  if (existsSync(join(dir, 'index.html'))) return { dir, built: false };
  const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  try {
    await promisify(execFile)(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
      cwd: join(ROOT, 'packages', 'console'),
      timeout: 120_000,
    });
    return { dir, built: true };
  } catch (error) {
    return {
      dir,
      built: false,
      error: error instanceof Error ? error.message.split('\n', 1)[0] : String(error),
    };
  }
};
