/**
 * Runs the benchmarks (all, or those named on the command line: `npm run bench -- append`),
 * prints their tables and writes `bench/results/latest.md`.
 */
import { fileURLToPath } from 'node:url';
import { appendBench } from './append.bench.js';
import { auditConsumerBench } from './audit-consumer.bench.js';
import { contextPolicyBench } from './context-policy.bench.js';
import { egressWebhookBench } from './egress-webhook.bench.js';
import { gatewayStreamBench } from './gateway-stream.bench.js';
import { mcpRoundtripBench } from './mcp-roundtrip.bench.js';
import { outboxBench } from './outbox.bench.js';
import { peerCheckpointBench } from './peer-checkpoint.bench.js';
import { rebuildBench } from './rebuild.bench.js';
import { sealingBench } from './sealing.bench.js';
import { stepPersistenceBench } from './step-persistence.bench.js';
import { subAgentsBench } from './sub-agents.bench.js';
import { tailReadBench } from './tail-read.bench.js';
import { toolRoundtripBench } from './tool-roundtrip.bench.js';
import { turnLatencyBench } from './turn-latency.bench.js';
import { usageQueryBench } from './usage-query.bench.js';
import { provisionInfra } from './lib/infra.js';
import type { Bench, BenchReport } from './lib/report.js';
import { machineLine, writeResults } from './lib/results-file.js';
import { textTable } from './lib/table.js';

const BENCHES: Bench[] = [
  appendBench,
  rebuildBench,
  tailReadBench,
  outboxBench,
  toolRoundtripBench,
  egressWebhookBench,
  mcpRoundtripBench,
  stepPersistenceBench,
  peerCheckpointBench,
  gatewayStreamBench,
  turnLatencyBench,
  usageQueryBench,
  auditConsumerBench,
  contextPolicyBench,
  subAgentsBench,
  sealingBench,
];
const RESULTS = fileURLToPath(new URL('./results/latest.md', import.meta.url));

async function main(): Promise<void> {
  const names = process.argv.slice(2).filter((arg) => !arg.startsWith('-'));
  const unknown = names.filter((name) => !BENCHES.some((b) => b.name === name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown benchmark ${unknown.join(', ')}; known: ${BENCHES.map((b) => b.name).join(', ')}`,
    );
  }
  const selected = names.length > 0 ? BENCHES.filter((b) => names.includes(b.name)) : BENCHES;
  const infra = await provisionInfra(selected.some((b) => b.needsNats));
  const reports: BenchReport[] = [];
  try {
    console.log(`Machine: ${machineLine(infra)}\n`);
    for (const bench of selected) {
      const started = Date.now();
      const report = await bench.run(infra);
      reports.push(report);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(`${textTable(report)}\n   (${seconds} s; store backend ${infra.mongoBackend})\n`);
    }
  } finally {
    if (reports.length > 0) {
      await writeResults(
        RESULTS,
        reports,
        infra,
        BENCHES.map((b) => b.name),
      );
      console.log(`Wrote ${RESULTS}`);
    }
    await infra.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
