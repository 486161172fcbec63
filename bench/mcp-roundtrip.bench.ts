/**
 * An MCP tool call as the tools service makes it, against a direct call with the official SDK's
 * client, in one process and one run, to the test kit's real MCP server (the SDK's Server over
 * Streamable HTTP on loopback). keel: `executeToolCall` (ledger begin and complete, the arguments
 * checked against the listed schema) → McpExecutor (tools/call on the session it keeps for the
 * tenant, server and headers, every request through the egress-guarded fetch). keel executor:
 * McpExecutor alone. raw: one connected SDK client calling tools/call (its session kept open);
 * raw, new session: an SDK client connected, called and closed per call (what keel's executor
 * did before it kept sessions).
 * The NATS hop and the log appends around a call are measured by `tool-roundtrip`.
 */
import { EgressPolicy } from '@keel/runtime';
import { startMcpTestServer } from '@keel/testkit';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { executeToolCall } from '../services/tools/src/execution/execute-tool-call.js';
import { InMemoryToolCallLedger } from '../services/tools/src/execution/ledger.js';
import { McpExecutor } from '../services/tools/src/execution/mcp-executor.js';
import type { Batch, Contender } from './lib/interleave.js';
import { interleave } from './lib/interleave.js';
import type { Bench, BenchReport, Row } from './lib/report.js';
import { withRatios } from './lib/report.js';
import { now, summarize } from './lib/stats.js';

const CALLS_PER_BATCH = 30;
const ROUNDS = 12;
const ARGS = { text: 'hello' };

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

const sdkClient = async (url: string): Promise<{ client: Client; close: () => Promise<void> }> => {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    close: async () => {
      await transport.terminateSession();
      await client.close();
    },
  };
};

/** The MCP tool call through Keel's executor and ledger vs the SDK's client alone. */
export const mcpRoundtripBench: Bench = {
  name: 'mcp-roundtrip',
  needsNats: false,
  async run(): Promise<BenchReport> {
    const server = await startMcpTestServer();
    const kept = await sdkClient(server.url);
    const mcp = new McpExecutor({ egress: EgressPolicy.fromAllowList('127.0.0.0/8,::1/128') });
    const ledger = new InMemoryToolCallLedger();
    const webhooks = { call: () => Promise.reject(new Error('no webhook in this bench')) };
    let id = 0;
    const expectOk = (ok: boolean, what: string) => {
      if (!ok) throw new Error(`${what} failed`);
    };
    const raw = async () => {
      const answer = await kept.client.callTool({ name: 'echo', arguments: ARGS });
      expectOk(answer.isError !== true, 'raw call');
    };
    const rawNewSession = async () => {
      const once = await sdkClient(server.url);
      const answer = await once.client.callTool({ name: 'echo', arguments: ARGS });
      await once.close();
      expectOk(answer.isError !== true, 'raw new-session call');
    };
    const executor = async () => {
      const result = await mcp.call({
        tenantId: 'bench',
        url: server.url,
        tool: 'echo',
        args: ARGS,
        toolCallId: `x${id++}`,
        timeoutMs: 10_000,
      });
      expectOk(result.ok, 'executor call');
    };
    const keel = async () => {
      const result = await executeToolCall(
        {
          tenantId: 'bench',
          conversationId: 'c',
          toolCallId: `call_${id++}`,
          name: 'srv__echo',
          args: ARGS,
          approvalGranted: false,
          tool: {
            name: 'srv__echo',
            kind: 'mcp',
            url: server.url,
            timeoutMs: 10_000,
            approval: 'never',
            inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
            mcp: { tool: 'echo', retryUnknown: false },
          },
        },
        { ledger, webhooks, mcp },
      );
      expectOk(result.ok, 'keel call');
    };
    const contenders: Contender[] = [
      { label: 'raw', batch: () => batchOf(raw) },
      { label: 'raw, new session', batch: () => batchOf(rawNewSession) },
      { label: 'keel executor', batch: () => batchOf(executor) },
      { label: 'keel', batch: () => batchOf(keel) },
    ];
    try {
      const collected = await interleave(contenders, { rounds: ROUNDS });
      const scenario = 'MCP tools/call on loopback';
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
      const withRatio = withRatios(rows);
      const p50 = (label: string) => withRatio.find((r) => r.variant === label)!.p50Ms;
      return {
        name: 'mcp-roundtrip',
        title: 'MCP tool call: Keel vs the SDK client',
        description: [
          `${ROUNDS} interleaved rounds of ${CALLS_PER_BATCH} sequential calls each (one warm-up round dropped), one process.`,
          'raw: a connected @modelcontextprotocol/sdk Client calling tools/call (session kept);',
          '"raw, new session": the SDK client connected, called and closed per call;',
          'keel executor: McpExecutor (its kept session for the tenant and server, through the egress guard);',
          'keel: executeToolCall (ledger in memory, arguments checked) around the executor.',
        ],
        rows: withRatio,
        notes: [
          `keel adds ${(p50('keel') - p50('raw')).toFixed(2)} ms p50 over a kept SDK session, ` +
            `${(p50('keel') - p50('raw, new session')).toFixed(2)} ms against an SDK session per call ` +
            '(what the executor did before it kept sessions: initialize and DELETE round trips per call).',
        ],
      };
    } finally {
      await mcp.close();
      await kept.close();
      await server.close();
    }
  },
};
