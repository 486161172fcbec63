import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import type { BenchInfra } from './infra.js';
import type { BenchReport } from './report.js';
import { markdownSection } from './table.js';

const begin = (name: string): string => `<!-- bench:${name} -->`;
const end = (name: string): string => `<!-- /bench:${name} -->`;

/** The machine and servers a run measured on, one line. */
export const machineLine = (infra: BenchInfra): string => {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return (
    `${cpus().length} cores (nproc), ${cpu}; Node ${process.version}; store backend ${infra.mongoBackend}: ` +
    `${infra.mongoVersion} (${infra.mongoSource}); ` +
    (infra.natsUrl ? `${infra.natsVersion} (${infra.natsSource})` : 'NATS not used')
  );
};

/**
 * Writes the reports into the results file, one marked section per benchmark: a run of one
 * benchmark replaces its own section and keeps the others, each stamped with when and where it ran.
 */
export async function writeResults(
  path: string,
  reports: BenchReport[],
  infra: BenchInfra,
  order: string[],
): Promise<void> {
  const previous = existsSync(path) ? await readFile(path, 'utf8') : '';
  const sections = new Map<string, string>();
  for (const name of order) {
    const match = new RegExp(`${escape(begin(name))}\\n([\\s\\S]*?)${escape(end(name))}`).exec(previous);
    if (match?.[1]) sections.set(name, match[1]);
  }
  const stamp = `_Measured ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}, Keel at ${codeVersion()}, on ${machineLine(infra)}._\n\n`;
  for (const report of reports) {
    const section = markdownSection(report);
    const [title, ...rest] = section.split('\n');
    sections.set(report.name, [title, '', stamp.trimEnd(), ...rest].join('\n'));
  }
  const body = order
    .filter((name) => sections.has(name))
    .map((name) => `${begin(name)}\n${sections.get(name)!.trimEnd()}\n${end(name)}`)
    .join('\n\n');
  const text = [
    '# Keel benchmarks: latest results',
    '',
    'Written by `npm run bench` (`bench/run.ts`); `npm run bench -- <name>` rewrites one section. Every figure is',
    'compared with the nearest raw baseline measured in the same process against the same server. p50/p99 are',
    'per operation; the ratio is Keel p50 / raw p50. Servers: `MONGODB_URL` / `NATS_URL` when set, otherwise the',
    "testkit's local provisioning (a fresh FerretDB on PostgreSQL when it is reachable, else SQLite; nats-server on",
    ':4222). Each section names the store backend it ran on.',
    'The machine has 2 cores and may be shared with other work: absolute figures move by up to 2x between runs;',
    'the ratios, measured interleaved within one run, are the steadier figures.',
    '',
    body,
    '',
  ].join('\n');
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

/** The commit measured, and whether the packages had uncommitted changes. */
const codeVersion = (): string => {
  try {
    const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8' }).trim();
    const dirty = git('status', '--porcelain', '--', 'packages') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' (+ uncommitted changes in packages/)' : ''}`;
  } catch {
    return 'an unknown commit';
  }
};

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
