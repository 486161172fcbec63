/**
 * What the egress guard adds to a webhook tool call: the tools service's WebhookExecutor (signed
 * POST, Idempotency-Key, JSON answer read back) through the guarded fetch, to a webhook on this
 * machine opened by the allow list, once by address and once by a name the guard resolves and
 * checks; against a plain `fetch` of the same body to the same server (the raw baseline), in
 * interleaved batches in one process. No database or bus: only the call.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EgressPolicy } from '@keel/runtime';
import { WebhookExecutor } from '../services/tools/src/execution/webhook-executor.js';
import type { Batch, Contender } from './lib/interleave.js';
import { interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { now, summarize } from './lib/stats.js';

const CALLS_PER_BATCH = 50;
const ROUNDS = 20;
const BODY = JSON.stringify({
  toolCallId: 'call_1',
  conversationId: 'c',
  tenantId: 't',
  args: { id: 'A-1' },
});

const batchOf = async (call: () => Promise<void>): Promise<Batch> => {
  const latencies: number[] = [];
  const start = now();
  for (let i = 0; i < CALLS_PER_BATCH; i++) {
    const t = now();
    await call();
    latencies.push(now() - t);
  }
  return { latencies, wallMs: now() - start };
};

/** The webhook tool call with and without the egress guard. */
export const egressWebhookBench: Bench = {
  name: 'egress-webhook',
  needsNats: false,
  async run(): Promise<BenchReport> {
    const server = createServer((request, response) => {
      request.resume().on('end', () => {
        response.setHeader('content-type', 'application/json');
        response.end('{"refunded":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const executor = new WebhookExecutor({ egress: EgressPolicy.fromAllowList('127.0.0.0/8,::1/128') });
    const webhook = (host: string) => async () => {
      const result = await executor.call({
        url: `http://${host}:${port}/refunds`,
        tenantId: 't',
        conversationId: 'c',
        toolCallId: 'call_1',
        args: { id: 'A-1' },
        timeoutMs: 10_000,
        secret: 'bench-secret',
      });
      if (!result.ok) throw new Error(`webhook call failed: ${result.error.code}`);
    };
    const raw = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/refunds`, {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json' },
      });
      await response.json();
    };
    const contenders: Contender[] = [
      { label: 'raw', batch: () => batchOf(raw) },
      { label: 'keel', batch: () => batchOf(webhook('127.0.0.1')) },
      { label: 'keel, by name', batch: () => batchOf(webhook('localhost')) },
    ];
    try {
      const collected = await interleave(contenders, { rounds: ROUNDS });
      const scenario = 'webhook tool call on loopback';
      const rows: Row[] = contenders.map(({ label }) => {
        const { latencies, wallMs } = collected.get(label)!;
        const s = summarize(latencies);
        return {
          scenario,
          variant: label,
          n: s.n,
          p50Ms: s.p50,
          p99Ms: s.p99,
          opsPerSec: (latencies.length / wallMs) * 1000,
        };
      });
      const [rawRow, keelRow, byName] = withRatios(rows) as [Row, Row, Row];
      return {
        name: 'egress-webhook',
        title: 'Egress guard on a webhook tool call',
        description: [
          `${ROUNDS} interleaved rounds of ${CALLS_PER_BATCH} sequential calls each (one warm-up round dropped).`,
          'keel: WebhookExecutor through the egress-guarded fetch (sign, check, POST, read the JSON answer);',
          '"by name": the host is `localhost`, resolved and checked by the guard on each new connection.',
          'raw: a plain fetch of the same body to the same server.',
        ],
        rows: withRatios(rows),
        notes: [
          `guard + executor add ${(keelRow.p50Ms - rawRow.p50Ms).toFixed(2)} ms p50 by address, ` +
            `${(byName.p50Ms - rawRow.p50Ms).toFixed(2)} ms by name (goal: a tool call ≤ 10 ms added).`,
        ],
      };
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  },
};
