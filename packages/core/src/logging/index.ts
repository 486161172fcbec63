export type { LogPort } from './log-port.js';
export { stderrLog } from './log-port.js';
