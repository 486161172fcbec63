export { DeciderSpec } from './decider-spec.js';
export { eventuallyTrue } from './eventually.js';
