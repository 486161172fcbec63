export * from './sleep.js';
