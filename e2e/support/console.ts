// The operator console in a real browser for end-to-end tests: the console's build (made here when
// a fresh clone has none: the gateway serves packages/console/dist) and Debian's Chromium driven
// by playwright-core (`npx playwright install` cannot download a browser here; .ci/run installs
// the `chromium` package).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where the gateway finds the console's files (services/gateway/src/console/console-assets.ts). */
export const CONSOLE_DIST = join(ROOT, 'packages', 'console', 'dist');

/** The Chromium binary: CHROMIUM_PATH, else Debian's. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Builds the console with its own Vite unless a build is there. */
export const ensureConsoleBuilt = async (): Promise<void> => {
  if (existsSync(join(CONSOLE_DIST, 'index.html'))) return;
  await promisify(execFile)(
    process.execPath,
    [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'],
    {
      cwd: join(ROOT, 'packages', 'console'),
      timeout: 120_000,
    },
  );
};

/** Headless Chromium; a clear error when it is not installed. */
export const launchChromium = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
};
