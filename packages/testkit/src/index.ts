export { eventually } from './eventually.js';
export type { EventuallyOptions } from './eventually.js';
export { freePort } from './free-port.js';
export { repoRoot, startProcess, stopAllProcesses } from './start-process.js';
export type { ExitInfo, ProcessHandle, StartProcessOptions } from './start-process.js';
export { MONGODB_URL_ENV, NATS_URL_ENV } from './infra-keys.js';
export { mongoUrlFor, testInfra } from './test-infra.js';
export type { TestInfra } from './test-infra.js';
export { uniqueName } from './unique-name.js';
