export { healthCheck, reflectedServices } from './grpc-probe.js';
