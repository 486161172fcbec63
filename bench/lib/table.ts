import type { BenchReport, Row } from './report.js';

const ms = (value: number): string =>
  value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const rate = (value: number | undefined): string =>
  value === undefined ? '' : value >= 100 ? value.toFixed(0) : value.toFixed(1);
const ratio = (value: number | undefined): string => (value === undefined ? '' : `${value.toFixed(2)}x`);

const withEvents = (report: BenchReport): boolean => report.rows.some((r) => r.eventsPerSec !== undefined);

const withCpu = (report: BenchReport): boolean => report.rows.some((r) => r.cpuUsPerOp !== undefined);

const withBytes = (report: BenchReport): boolean => report.rows.some((r) => r.bytesPerOp !== undefined);

const header = (report: BenchReport): string[] => [
  'scenario',
  'variant',
  'n',
  'p50 ms',
  'p99 ms',
  'ops/s',
  ...(withEvents(report) ? ['events/s'] : []),
  ...(withBytes(report) ? ['bytes/op'] : []),
  ...(withCpu(report) ? ['client CPU µs/op'] : []),
  'keel/raw p50',
];

const cellsOf =
  (report: BenchReport) =>
  (row: Row): string[] => [
    row.scenario,
    row.variant,
    String(row.n),
    ms(row.p50Ms),
    ms(row.p99Ms),
    rate(row.opsPerSec),
    ...(withEvents(report) ? [rate(row.eventsPerSec)] : []),
    ...(withBytes(report) ? [row.bytesPerOp === undefined ? '' : row.bytesPerOp.toFixed(0)] : []),
    ...(withCpu(report) ? [row.cpuUsPerOp === undefined ? '' : row.cpuUsPerOp.toFixed(0)] : []),
    ratio(row.ratio),
  ];

/** The report as a plain-text table for the terminal. */
export const textTable = (report: BenchReport): string => {
  const lines = [header(report), ...report.rows.map(cellsOf(report))];
  const widths = lines[0]!.map((_, col) => Math.max(...lines.map((line) => line[col]!.length)));
  const numeric = (col: number): boolean => col >= 2;
  const format = (line: string[]): string =>
    line
      .map((cell, col) => (numeric(col) ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!)))
      .join('  ');
  return [
    `== ${report.title}`,
    ...report.description.map((d) => `   ${d}`),
    format(lines[0]!),
    ...lines.slice(1).map(format),
    ...report.notes.map((n) => `   - ${n}`),
  ].join('\n');
};

/** The report as a markdown section for `bench/results/latest.md`. */
export const markdownSection = (report: BenchReport): string => {
  const head = header(report);
  const align = head.map((_, col) => (col >= 2 ? '---:' : '---'));
  const row = (line: string[]): string => `| ${line.join(' | ')} |`;
  return [
    `## ${report.title}`,
    '',
    ...report.description.flatMap((paragraph) => [paragraph, '']),
    row(head),
    row(align),
    ...report.rows.map((r) => row(cellsOf(report)(r))),
    '',
    ...report.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
};
