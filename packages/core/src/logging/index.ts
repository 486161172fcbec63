export * from './log-port.js';
