import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { loadConfig } from './config.js';
import { portInUseError } from './startup-errors.js';

const inUse = (port: number) =>
  Object.assign(new Error(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`), {
    code: 'EADDRINUSE',
    port,
  });
const grpcInUse = (port: number) =>
  new Error(
    `No address added out of total 1 resolved errors: [listen EADDRINUSE: address already in use 127.0.0.1:${port}]`,
  );

describe('portInUseError (a taken port names its variable)', () => {
  it('names PORT for the HTTP server and the variable that chose the gRPC port', () => {
    const gateway = loadConfig('gateway', { PORT: '8081', HOST: '127.0.0.1' });
    expect(portInUseError(inUse(8081), gateway)?.message).toBe(
      'PORT 8081 is already in use on 127.0.0.1 (set PORT to another port)',
    );
    expect(portInUseError(grpcInUse(50051), gateway)?.message).toBe(
      'GRPC_PORT 50051 is already in use on 127.0.0.1 (set GRPC_PORT to another port)',
    );
    const agent = loadConfig('agent', {});
    expect(portInUseError(grpcInUse(50052), agent)?.message).toBe(
      'AGENT_GRPC_PORT 50052 is already in use on 127.0.0.1 (set AGENT_GRPC_PORT to another port)',
    );
    expect(portInUseError(grpcInUse(6000), loadConfig('agent', { GRPC_PORT: '6000' }))?.variable).toBe(
      'GRPC_PORT',
    );
    expect(
      portInUseError(grpcInUse(6001), loadConfig('tools', { GRPC_PORT: '6000', TOOLS_GRPC_PORT: '6001' }))
        ?.variable,
    ).toBe('TOOLS_GRPC_PORT');
  });

  it('leaves every other failure as it is', () => {
    const config = loadConfig('gateway', {});
    expect(portInUseError(new Error('boom'), config)).toBeUndefined();
    expect(portInUseError(new ConfigError('METRICS_PORT', 'is in use'), config)).toBeUndefined();
    expect(portInUseError(undefined, config)).toBeUndefined();
  });
});
