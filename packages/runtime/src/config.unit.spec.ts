import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_GRPC_PORTS, SERVICE_NAMES, grpcAddress, loadConfig } from './config.js';

const rejects = (env: Record<string, string>, variable: string, message: RegExp): void => {
  let thrown: unknown;
  try {
    loadConfig('agent', env);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  expect((thrown as ConfigError).variable).toBe(variable);
  expect((thrown as ConfigError).message).toMatch(new RegExp(`^${variable} `));
  expect((thrown as ConfigError).message).toMatch(message);
};

describe('loadConfig', () => {
  it('defaults to the embedded store and bus, loopback gRPC on the service port, and the documented settings', () => {
    expect(loadConfig('gateway', {})).toEqual({
      service: 'gateway',
      mongodbUrl: undefined,
      natsUrl: undefined,
      grpcHost: '127.0.0.1',
      grpcPort: 50051,
      grpcPortVariable: 'GRPC_PORT',
      httpPort: 8080,
      httpHost: '0.0.0.0',
      logLevel: 'info',
      natsStream: 'KEEL_EVENTS',
      subjectPrefix: 'keel.events',
      shutdownTimeoutMs: 10_000,
      outboxLeaseMs: 10_000,
    });
  });

  it('gives each service its own default gRPC port', () => {
    const ports = SERVICE_NAMES.map((service) => loadConfig(service, {}).grpcPort);
    expect(ports).toEqual([50051, 50052, 50053, 50054, 50055]);
    expect(Object.values(DEFAULT_GRPC_PORTS)).toEqual(ports);
  });

  it('takes every setting from the environment', () => {
    const config = loadConfig('pricing', {
      MONGODB_URL: 'mongodb://user:pw@db1:27017,db2:27017/keel?replicaSet=rs0',
      NATS_URL: 'nats://n1:4222, tls://n2:4222',
      GRPC_HOST: '0.0.0.0',
      GRPC_PORT: '6000',
      PORT: '3000',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'DEBUG',
      KEEL_NATS_STREAM: 'TEST_events-1',
      KEEL_SUBJECT_PREFIX: 'test.abc_1.events',
      SHUTDOWN_TIMEOUT_MS: '2500',
    });
    expect(config).toMatchObject({
      mongodbUrl: 'mongodb://user:pw@db1:27017,db2:27017/keel?replicaSet=rs0',
      natsUrl: 'nats://n1:4222, tls://n2:4222',
      grpcHost: '0.0.0.0',
      grpcPort: 6000,
      httpPort: 3000,
      httpHost: '127.0.0.1',
      logLevel: 'debug',
      natsStream: 'TEST_events-1',
      subjectPrefix: 'test.abc_1.events',
      shutdownTimeoutMs: 2500,
    });
    expect(loadConfig('agent', { MONGODB_URL: 'mongodb+srv://cluster.example.net/keel' }).mongodbUrl).toBe(
      'mongodb+srv://cluster.example.net/keel',
    );
  });

  it('prefers <SERVICE>_GRPC_PORT over GRPC_PORT, so one process can set the five apart', () => {
    const env = { GRPC_PORT: '7000', AGENT_GRPC_PORT: '7002' };
    expect(loadConfig('agent', env).grpcPort).toBe(7002);
    expect(loadConfig('tools', env).grpcPort).toBe(7000);
    expect(loadConfig('tools', { AGENT_GRPC_PORT: '7002' }).grpcPort).toBe(50053);
  });

  it('treats blank variables as unset', () => {
    const config = loadConfig('audit', { MONGODB_URL: '', NATS_URL: '  ', GRPC_PORT: '', LOG_LEVEL: '' });
    expect(config).toMatchObject({
      mongodbUrl: undefined,
      natsUrl: undefined,
      grpcPort: 50054,
      logLevel: 'info',
    });
  });

  it('rejects ports outside 1-65535 or not numbers, naming the variable', () => {
    rejects({ GRPC_PORT: '0' }, 'GRPC_PORT', /from 1 to 65535, got "0"/);
    rejects({ GRPC_PORT: '65536' }, 'GRPC_PORT', /from 1 to 65535/);
    rejects({ PORT: 'http' }, 'PORT', /port number/);
    rejects({ PORT: '80.5' }, 'PORT', /port number/);
    rejects({ PORT: '-1' }, 'PORT', /port number/);
    rejects({ AGENT_GRPC_PORT: '1e3' }, 'AGENT_GRPC_PORT', /port number/);
  });

  it('rejects URLs with another scheme, naming the variable but never echoing the URL', () => {
    rejects(
      { MONGODB_URL: 'postgres://user:secretpw@db/keel' },
      'MONGODB_URL',
      /mongodb:\/\/ or mongodb\+srv:\/\//,
    );
    rejects({ MONGODB_URL: 'localhost:27017' }, 'MONGODB_URL', /must be a URL/);
    rejects({ NATS_URL: 'http://n1:4222' }, 'NATS_URL', /nats:\/\//);
    rejects({ NATS_URL: 'nats://n1:4222,redis://n2' }, 'NATS_URL', /nats:\/\//);
    expect(() => loadConfig('agent', { MONGODB_URL: 'postgres://user:secretpw@db/keel' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secretpw') }),
    );
  });

  it('rejects other malformed values, naming the variable', () => {
    rejects({ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL', /one of fatal, error, warn, info, debug, trace, silent/);
    rejects({ KEEL_NATS_STREAM: 'KEEL.EVENTS' }, 'KEEL_NATS_STREAM', /letters, digits/);
    rejects({ KEEL_SUBJECT_PREFIX: 'keel.>' }, 'KEEL_SUBJECT_PREFIX', /no wildcards/);
    rejects({ KEEL_SUBJECT_PREFIX: 'keel..events' }, 'KEEL_SUBJECT_PREFIX', /dot-separated/);
    rejects({ SHUTDOWN_TIMEOUT_MS: 'soon' }, 'SHUTDOWN_TIMEOUT_MS', /milliseconds/);
    rejects({ SHUTDOWN_TIMEOUT_MS: '0' }, 'SHUTDOWN_TIMEOUT_MS', /from 100/);
    rejects({ GRPC_HOST: 'bad host' }, 'GRPC_HOST', /host name/);
  });
});

describe('grpcAddress', () => {
  it('joins host and port, bracketing IPv6 literals', () => {
    expect(grpcAddress({ grpcHost: '127.0.0.1', grpcPort: 50051 })).toBe('127.0.0.1:50051');
    expect(grpcAddress({ grpcHost: '::1', grpcPort: 50052 })).toBe('[::1]:50052');
  });
});
