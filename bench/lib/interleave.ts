import { now } from './stats.js';

/** Latencies of the operations of one batch and the batch's wall time, in milliseconds. */
export interface Batch {
  latencies: number[];
  wallMs: number;
}

/** One contender of a comparison: runs a batch of operations when asked. */
export interface Contender {
  label: string;
  batch(): Promise<Batch>;
}

/** Every recorded latency of one contender, the summed wall time of its batches and the CPU this process spent in them. */
export interface Collected {
  latencies: number[];
  wallMs: number;
  /** User + system CPU time of this process (all its threads) during the batches. */
  cpuMs: number;
}

/**
 * Runs the contenders' batches back to back, `rounds` times, rotating who goes first so that
 * neither drift of the server (a growing collection, a warming cache) nor order favours one.
 * The first `warmupRounds` rounds are run and thrown away.
 */
export async function interleave(
  contenders: Contender[],
  { rounds, warmupRounds = 1 }: { rounds: number; warmupRounds?: number },
): Promise<Map<string, Collected>> {
  const collected = new Map<string, Collected>();
  for (const c of contenders) collected.set(c.label, { latencies: [], wallMs: 0, cpuMs: 0 });
  for (let round = 0; round < warmupRounds + rounds; round++) {
    const order = contenders.map((_, k) => contenders[(k + round) % contenders.length]!);
    for (const contender of order) {
      const cpu = process.cpuUsage();
      const batch = await contender.batch();
      const used = process.cpuUsage(cpu);
      if (round < warmupRounds) continue;
      const into = collected.get(contender.label)!;
      into.latencies.push(...batch.latencies);
      into.wallMs += batch.wallMs;
      into.cpuMs += (used.user + used.system) / 1000;
    }
  }
  return collected;
}

/**
 * `writers` concurrent loops, each running `opsPerWriter` operations one after the other
 * (`op(writer, k)`), as independent writers would; returns every operation's latency.
 */
export async function concurrentWriters(
  writers: number,
  opsPerWriter: number,
  op: (writer: number, k: number) => Promise<void>,
): Promise<Batch> {
  const latencies: number[] = [];
  const start = now();
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      for (let k = 0; k < opsPerWriter; k++) {
        const t = now();
        await op(writer, k);
        latencies.push(now() - t);
      }
    }),
  );
  return { latencies, wallMs: now() - start };
}
