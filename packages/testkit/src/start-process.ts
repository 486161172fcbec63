import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { MONGODB_URL_ENV, NATS_URL_ENV } from './infra-keys.js';
import { testInfra } from './test-infra.js';

/** The repository root: cwd of processes started by `startProcess`. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** How a process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What `startProcess` runs, and how to know it is ready. */
export interface StartProcessOptions {
  /** Shown in errors and echoed output. */
  name: string;
  /** A TypeScript (or JavaScript) entry point, relative to the repository root or absolute. */
  entry: string;
  args?: string[];
  /** Added to the test process's env, which already holds KEEL_TEST_NATS_URL / KEEL_TEST_MONGODB_URL. */
  env?: Record<string, string>;
  /** Resolve only once a stdout or stderr line matches this. */
  readyLine?: RegExp;
  readyTimeoutMs?: number;
  /** Copy the process's output to the test's stderr, prefixed with its name (default: KEEL_TEST_ECHO=1). */
  echo?: boolean;
}

/** A running service process, for tests that kill it (SIGKILL included) and start it again. */
export interface ProcessHandle {
  readonly name: string;
  readonly pid: number;
  /** Every stdout line so far, in order. */
  readonly stdoutLines: string[];
  /** Every stderr line so far, in order. */
  readonly stderrLines: string[];
  /** Set once the process has exited and its output is drained. */
  readonly exit: ExitInfo | undefined;
  /** Sends `signal` (default SIGTERM), escalating to SIGKILL after `graceMs`, and resolves on exit. */
  kill(signal?: NodeJS.Signals, graceMs?: number): Promise<ExitInfo>;
  /** Resolves when the process exits on its own; rejects after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<ExitInfo>;
  /** Resolves with the first stdout or stderr line (already seen or yet to come) matching `re`. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  /** The last lines of output, for error messages. */
  tail(lines?: number): string;
}

const live = new Set<ProcessHandle>();

/** Kills every process started by `startProcess` that is still running; runs after each test file. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...live].map((handle) => handle.kill('SIGKILL')));
}

try {
  afterAll(stopAllProcesses);
} catch {
  // Imported outside a vitest test file: the exit hook below still cleans up.
}
process.once('exit', () => {
  for (const handle of live) {
    try {
      process.kill(handle.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/** Spawns `node --conditions=@keel/source --import tsx <entry>` from the repo root; killed when the test file ends. */
export async function startProcess(options: StartProcessOptions): Promise<ProcessHandle> {
  const { name, entry, args = [], readyLine, readyTimeoutMs = 30_000 } = options;
  const echo = options.echo ?? process.env.KEEL_TEST_ECHO === '1';
  const child = spawn(process.execPath, ['--conditions=@keel/source', '--import', 'tsx', entry, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...infraEnv(), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const stdoutLines: string[] = [];
  const stderrLines: string[] = [];
  const all: string[] = [];
  const lineWaiters = new Set<(line: string) => void>();
  const exitWaiters = new Set<(exit: ExitInfo) => void>();
  let exit: ExitInfo | undefined;
  let spawnError: Error | undefined;

  const collect = (stream: NodeJS.ReadableStream, sink: string[]): void => {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      sink.push(line);
      all.push(line);
      if (echo) process.stderr.write(`[${name}] ${line}\n`);
      for (const waiter of lineWaiters) waiter(line);
    });
  };
  collect(child.stdout, stdoutLines);
  collect(child.stderr, stderrLines);

  const tail = (lines = 40): string => all.slice(-lines).join('\n');
  const describeExit = (info: ExitInfo): string =>
    spawnError
      ? `failed to spawn: ${spawnError.message}`
      : `exited with ${info.signal ?? `code ${String(info.code)}`}`;

  const onExit = (info: ExitInfo): void => {
    if (exit) return;
    exit = info;
    live.delete(handle);
    for (const waiter of exitWaiters) waiter(info);
  };
  child.once('error', (error) => {
    spawnError = error;
    if (child.pid === undefined) onExit({ code: null, signal: null });
  });
  child.once('close', (code, signal) => onExit({ code, signal }));

  const whenExited = (): Promise<ExitInfo> =>
    exit ? Promise.resolve(exit) : new Promise((resolve) => exitWaiters.add(resolve));

  const withTimeout = <T>(
    timeoutMs: number,
    what: string,
    body: (
      resolve: (value: T) => void,
      reject: (error: Error) => void,
      cleanup: (fn: () => void) => void,
    ) => void,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const cleanups: (() => void)[] = [];
      const finish = (): void => cleanups.forEach((fn) => fn());
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`${name}: ${what} not within ${timeoutMs} ms. Last output:\n${tail()}`));
      }, timeoutMs);
      cleanups.push(() => clearTimeout(timer));
      body(
        (value) => {
          finish();
          resolve(value);
        },
        (error) => {
          finish();
          reject(error);
        },
        (fn) => cleanups.push(fn),
      );
    });

  const handle: ProcessHandle = {
    name,
    pid: child.pid ?? -1,
    stdoutLines,
    stderrLines,
    get exit() {
      return exit;
    },
    tail,
    waitForLine(re, timeoutMs = 30_000) {
      return withTimeout<string>(timeoutMs, `no line matching ${String(re)}`, (resolve, reject, cleanup) => {
        const seen = all.find((line) => re.test(line));
        if (seen !== undefined) return resolve(seen);
        const onLine = (line: string): void => {
          if (re.test(line)) resolve(line);
        };
        const onExited = (info: ExitInfo): void =>
          reject(
            new Error(`${name} ${describeExit(info)} before printing ${String(re)}. Last output:\n${tail()}`),
          );
        if (exit) return onExited(exit);
        lineWaiters.add(onLine);
        exitWaiters.add(onExited);
        cleanup(() => {
          lineWaiters.delete(onLine);
          exitWaiters.delete(onExited);
        });
      });
    },
    waitForExit(timeoutMs = 30_000) {
      return withTimeout<ExitInfo>(timeoutMs, 'did not exit', (resolve, _reject, cleanup) => {
        if (exit) return resolve(exit);
        exitWaiters.add(resolve);
        cleanup(() => exitWaiters.delete(resolve));
      });
    },
    async kill(signal = 'SIGTERM', graceMs = 10_000) {
      if (exit) return exit;
      child.kill(signal);
      if (signal === 'SIGKILL') return whenExited();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        return await whenExited();
      } finally {
        clearTimeout(timer);
      }
    },
  };
  if (child.pid !== undefined) live.add(handle);

  if (spawnError || child.pid === undefined) {
    await whenExited();
    throw new Error(`${name}: ${describeExit(exit ?? { code: null, signal: null })}`);
  }
  if (readyLine) {
    try {
      await handle.waitForLine(readyLine, readyTimeoutMs);
    } catch (error) {
      await handle.kill('SIGKILL');
      throw error;
    }
  }
  return handle;
}

function infraEnv(): Record<string, string> {
  try {
    const { natsUrl, mongoUrl } = testInfra();
    return { [NATS_URL_ENV]: natsUrl, [MONGODB_URL_ENV]: mongoUrl };
  } catch {
    return {};
  }
}
