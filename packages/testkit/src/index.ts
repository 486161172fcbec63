export { eventually } from './eventually.js';
export type { EventuallyOptions } from './eventually.js';
export { freePort } from './free-port.js';
export * from './fake-openai/index.js';
export { repoRoot, startProcess, stopAllProcesses } from './start-process.js';
export type { ExitInfo, ProcessHandle, StartProcessOptions } from './start-process.js';
export { MONGODB_URL_ENV, NATS_URL_ENV } from './infra-keys.js';
export { mongoUrlFor, testInfra } from './test-infra.js';
export type { TestInfra } from './test-infra.js';
export { uniqueName } from './unique-name.js';
export { openSse } from './sse-client.js';
export type { SseFrame, SseStream } from './sse-client.js';
export { MCP_TEST_TOOLS, startMcpTestServer } from './mcp/mcp-test-server.js';
export type { McpTestCall, McpTestServer } from './mcp/mcp-test-server.js';
export { startFakeAnthropic } from './fake-anthropic/fake-anthropic.js';
export type {
  FakeAnthropic,
  FakeAnthropicReply,
  FakeAnthropicRequest,
} from './fake-anthropic/fake-anthropic.js';
