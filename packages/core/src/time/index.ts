export { sleep } from './sleep.js';
