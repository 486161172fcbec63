import type { BenchInfra } from './infra.js';

/** One row of a benchmark table: a scenario measured for Keel or for its raw baseline. */
export interface Row {
  scenario: string;
  /** `keel`, `raw`, or another label for extra comparison rows. */
  variant: string;
  /** Measured operations (warm-up excluded). */
  n: number;
  p50Ms: number;
  p99Ms: number;
  /** Operations per second over the measured wall time (all writers together). */
  opsPerSec?: number;
  /** Events per second, where an operation carries several events. */
  eventsPerSec?: number;
  /** Bytes written to MongoDB per operation (BSON size of the documents it wrote). */
  bytesPerOp?: number;
  /** CPU time this process spent per operation (driver and Keel; the server's CPU is not counted). */
  cpuUsPerOp?: number;
  /** Keel's median over the raw baseline's median for the same scenario (on Keel rows only). */
  ratio?: number;
}

/** What one benchmark measured, ready to print and to write into `bench/results/latest.md`. */
export interface BenchReport {
  name: string;
  title: string;
  /** Sentences shown under the title: what is compared, the sizes, the goal. */
  description: string[];
  rows: Row[];
  /** Observations derived from the run (goal met or not, where the time goes). */
  notes: string[];
}

/** Sets `ratio` on each Keel row (`keel…`): its p50 over the p50 of the `raw` row of the same scenario. */
export const withRatios = (rows: Row[]): Row[] =>
  rows.map((row) => {
    if (!row.variant.startsWith('keel')) return row;
    const raw = rows.find((r) => r.scenario === row.scenario && r.variant === 'raw');
    return raw ? { ...row, ratio: row.p50Ms / raw.p50Ms } : row;
  });

/** A benchmark that `bench/run.ts` can run by name. */
export interface Bench {
  name: string;
  /** Whether it needs NATS (the store benchmarks run on MongoDB alone). */
  needsNats: boolean;
  run(infra: BenchInfra): Promise<BenchReport>;
}
