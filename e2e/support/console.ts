// The operator console in a real browser for end-to-end tests: the console's build (made here, as
// the dev mode makes it, when a fresh clone has none: the gateway serves packages/console/dist)
// and Debian's Chromium driven by playwright-core (`npx playwright install` cannot download a
// browser here; .ci/run installs the `chromium` package).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { chromium } from 'playwright-core';
import { ensureConsoleBuilt as buildConsole } from '../../apps/dev/src/dev-console.js';

/** Where the gateway finds the console's files (services/gateway/src/console/console-assets.ts). */
export const CONSOLE_DIST = join(
  fileURLToPath(new URL('../../', import.meta.url)),
  'packages',
  'console',
  'dist',
);

/** The Chromium binary: CHROMIUM_PATH, else Debian's. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Builds the console unless a build is there; a failed build fails the test with Vite's message. */
export const ensureConsoleBuilt = async (): Promise<void> => {
  const build = await buildConsole(CONSOLE_DIST);
  if (build.error !== undefined) throw new Error(`the console could not be built: ${build.error}`);
};

/** Headless Chromium; a clear error when it is not installed. */
export const launchChromium = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
};
