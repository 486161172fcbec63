// grpcurl (github.com/fullstorydev/grpcurl), a third-party gRPC client that knows the services only
// through server reflection: what a user without Keel's protos would run. Installed by
// packages/testkit/scripts/install-grpcurl.sh (.ci/run runs it); a missing one fails the test.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

let found: Promise<string> | undefined;

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** grpcurl on PATH, else in `$(go env GOBIN)` or `$(go env GOPATH)/bin`; rejects with how to install it. */
export const findGrpcurl = (): Promise<string> =>
  (found ??= (async () => {
    const onPath = (process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'grpcurl'))
      .find(executable);
    if (onPath) return onPath;
    const goDirs: string[] = [];
    try {
      const { stdout } = await run('go', ['env', 'GOBIN', 'GOPATH'], { timeout: 10_000 });
      const [gobin = '', gopath = ''] = stdout.split('\n');
      if (gobin) goDirs.push(gobin);
      goDirs.push(
        ...gopath
          .split(delimiter)
          .filter(Boolean)
          .map((dir) => join(dir, 'bin')),
      );
    } catch {
      // No Go: only PATH could have had it.
    }
    const inGo = goDirs.map((dir) => join(dir, 'grpcurl')).find(executable);
    if (inGo) return inGo;
    throw new Error(
      `grpcurl not found on PATH nor in ${goDirs.join(', ') || '$(go env GOPATH)/bin (no Go)'}: ` +
        'install it with `bash packages/testkit/scripts/install-grpcurl.sh` (.ci/run does)',
    );
  })());

/** What one grpcurl run printed, and its exit code. */
export interface GrpcurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `grpcurl -plaintext <args>`; never rejects on a non-zero exit (the result says it). */
export const grpcurl = async (args: readonly string[]): Promise<GrpcurlResult> => {
  const bin = await findGrpcurl();
  try {
    const { stdout, stderr } = await run(bin, ['-plaintext', ...args], { timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
};
