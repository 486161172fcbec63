// The configuration schema against the code and .env.example: every variable a service reads is
// registered and documented, and a bad value or an unknown KEEL_* name stops the start, named.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';
import { checkEnv, readEnv } from './env-check.js';
import { ENV_VARS, TEST_ONLY_PREFIX } from './env-vars.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));

/** Source files of the services, npm start and their libraries (not tests, fixtures or the test kit). */
const sourceFiles = (dir: string): string[] =>
  readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      return ['node_modules', 'dist', 'testing', 'test', 'test-fixtures'].includes(entry)
        ? []
        : sourceFiles(path);
    }
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });

const NAME = '([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|PORT|HOST)';
const READS = [
  new RegExp(`\\benv\\.${NAME}\\b`, 'g'), // process.env.X, env.X
  new RegExp(`\\benv\\[\\s*['"]${NAME}['"]\\s*\\]`, 'g'), // env['X']
  new RegExp(`\\breadEnv\\(\\s*['"]${NAME}['"]`, 'g'), // readEnv('X')
  new RegExp(`\\benv\\s*,\\s*['"]${NAME}['"]`, 'g'), // read(env, 'X'), port(env, 'X', …)
  /['"]([A-Z][A-Z0-9]*_(?:API_KEY|BASE_URL|GRPC_URL|HOST))['"]/g, // provider keys and addresses by name
];

const readsInCode = (): Map<string, string> => {
  const found = new Map<string, string>();
  const dirs = [
    ...readdirSync(join(root, 'services')).map((name) => join(root, 'services', name, 'src')),
    // npm start's composition (the dev key, model and master key settings).
    ...readdirSync(join(root, 'apps')).map((name) => join(root, 'apps', name, 'src')),
    join(root, 'packages/runtime/src'),
    join(root, 'packages/core/src'),
  ];
  // The schema itself names every variable: not a read.
  for (const file of dirs.flatMap(sourceFiles).filter((path) => !path.includes('/runtime/src/env/'))) {
    const text = readFileSync(file, 'utf8');
    for (const pattern of READS) {
      for (const match of text.matchAll(pattern)) {
        const name = match[1] ?? '';
        // KEEL_TEST_* are test-only fault hooks, reserved and never a setting (env-check passes them).
        if (name.startsWith(TEST_ONLY_PREFIX)) continue;
        if (!found.has(name)) found.set(name, relative(root, file));
      }
    }
  }
  return found;
};

const envExample = readFileSync(join(root, '.env.example'), 'utf8')
  .split('\n')
  .map((line) => /^(?:# )?([A-Z][A-Z0-9_]*)=(\S*)\s+# (.+)$/.exec(line))
  .filter((match) => match !== null)
  .map(([, name, value, comment]) => ({ name: name ?? '', value: value ?? '', comment: comment ?? '' }));

describe('the configuration schema', () => {
  it('registers, and .env.example lists, every environment variable the services read', () => {
    const reads = readsInCode();
    expect(reads.size).toBeGreaterThan(20); // the scan works
    const registered = new Set(ENV_VARS.map((variable) => variable.name));
    const documented = new Set(envExample.map((line) => line.name));
    const missing = [...reads].filter(([name]) => !registered.has(name) || !documented.has(name));
    expect(missing.map(([name, file]) => `${name} (read in ${file})`)).toEqual([]);
  });

  it('registers only variables some code reads (a stale entry would be a setting that does nothing)', () => {
    const reads = readsInCode();
    const perService = new Set(
      ['GATEWAY', 'AGENT', 'TOOLS', 'AUDIT', 'PRICING'].map((s) => `${s}_GRPC_PORT`),
    );
    const unread = ENV_VARS.filter((variable) => !reads.has(variable.name) && !perService.has(variable.name));
    expect(unread.map((variable) => variable.name)).toEqual([]);
  });

  it('.env.example has one commented line per registered variable, with its default', () => {
    expect(envExample.map((line) => line.name)).toEqual(ENV_VARS.map((variable) => variable.name));
    for (const line of envExample) {
      const variable = ENV_VARS.find((v) => v.name === line.name);
      expect(line.value, line.name).toBe(variable?.default ?? '');
      expect(line.comment.length, line.name).toBeGreaterThan(10);
      if (line.value !== '') expect(() => checkEnv({ [line.name]: line.value }), line.name).not.toThrow();
    }
  });

  it('stops the start on a malformed value, naming the variable', () => {
    const bad: Record<string, string> = {
      KEEL_AGENT_CONCURRENCY: 'lots',
      KEEL_SSE_HEARTBEAT_MS: '-5',
      PORT: '80800',
      NATS_URL: 'localhost:4222',
      AGENT_GRPC_URL: 'agent',
      LOG_LEVEL: 'loud',
      KEEL_BUDGET_TURN_RESERVE_USD: 'five cents',
      KEEL_EGRESS_ALLOW: '127.0.0.0/8,10.0.0.0/33',
    };
    for (const [name, value] of Object.entries(bad)) {
      const error = (() => {
        try {
          loadConfig('gateway', { [name]: value });
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error, name).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(name);
      expect((error as Error).message.startsWith(`${name} must be`), (error as Error).message).toBe(true);
    }
  });

  it('refuses an unknown KEEL_* name and suggests the close one; other names and KEEL_TEST_* pass', () => {
    expect(() => loadConfig('agent', { KEEL_AGENT_CONCURENCY: '4' })).toThrow(
      'KEEL_AGENT_CONCURENCY is not a Keel setting (did you mean KEEL_AGENT_CONCURRENCY?)',
    );
    expect(() => loadConfig('agent', { KEEL_WHATEVER: '1' })).toThrow(
      /^KEEL_WHATEVER is not a Keel setting;/,
    );
    expect(() =>
      loadConfig('agent', { HOME: '/root', KEEL_TEST_ECHO: '1', KEEL_AGENT_CONCURRENCY: '4' }),
    ).not.toThrow();
  });

  it('never echoes a secret or a URL in the error', () => {
    const master = 'not-really-a-key';
    expect(() => checkEnv({ KEEL_MASTER_KEY: master })).toThrow(
      /^KEEL_MASTER_KEY must be 32 random bytes in base64/,
    );
    expect(() => checkEnv({ KEEL_MASTER_KEY: master })).not.toThrow(new RegExp(master));
    expect(() => checkEnv({ KEEL_OPERATOR_KEY: 'short' })).toThrow(
      'KEEL_OPERATOR_KEY must be at least 12 characters long',
    );
    expect(() => checkEnv({ MONGODB_URL: 'http://user:pw@db/keel' })).not.toThrow(/pw/);
  });

  it('reads typed values with the defaults of .env.example', () => {
    expect(readEnv('KEEL_AGENT_CONCURRENCY', {})).toBe(32);
    expect(readEnv('KEEL_AGENT_CONCURRENCY', { KEEL_AGENT_CONCURRENCY: ' 4 ' })).toBe(4);
    expect(readEnv('KEEL_BUDGET_TURN_RESERVE_USD', { KEEL_BUDGET_TURN_RESERVE_USD: '0.5' })).toBe(0.5);
    expect(readEnv('KEEL_RATE_LIMIT_BUCKET', {})).toBeUndefined();
    expect(() => readEnv('KEEL_NOPE', {})).toThrow(ConfigError);
  });
});
