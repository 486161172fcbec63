// The test MCP server as its own process (e2e tests kill it mid-call): MCP_PORT, then one JSON
// line `{"msg":"ready","url":…}`. `GET /calls` answers what it received.
import { startMcpTestServer } from './mcp-test-server.js';

const server = await startMcpTestServer({ port: Number(process.env['MCP_PORT'] ?? 0) });
process.stdout.write(`${JSON.stringify({ msg: 'ready', url: server.url })}\n`);
const stop = (): void => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
