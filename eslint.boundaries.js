// @ts-check
// The architecture's boundaries as lint rules (STYLE.md "Boundaries"): drivers only in their
// adapters, pure domain code, services apart. `packages/testkit/src/lint-boundaries.unit.spec.ts`
// lints a deliberate violation of each rule with these very blocks.

const SERVICES = ['agent', 'audit', 'gateway', 'pricing', 'tools'];
const TESTS = ['**/*.spec.ts', '**/testing/**', 'e2e/**', 'bench/**', 'packages/testkit/**'];

/** What domain code (deciders, evolve, policies) may not import: I/O, frameworks, contracts. */
const DOMAIN_FORBIDDEN = {
  paths: [
    { name: '@keel/runtime', message: 'domain code is pure: take what it needs as arguments' },
    { name: 'mongodb', message: 'domain code is pure: no driver' },
  ],
  patterns: [
    { group: ['node:*'], message: 'domain code is pure: no Node built-ins' },
    { group: ['@nestjs/*'], message: 'domain code is pure: no NestJS' },
    { group: ['@nats-io/*'], message: 'domain code is pure: no driver' },
    { group: ['@grpc/*', '@keel/proto', '@keel/proto/*'], message: 'proto types stop at the edge' },
    {
      group: SERVICES.flatMap((service) => [`@keel/${service}`, `@keel/${service}/*`]),
      message: 'domain code imports no service',
    },
  ],
};

/** Deciders, states, commands and policies: the pure core of each service. */
export const DOMAIN_FILES = [
  '**/*.decider.ts',
  '**/*.state.ts',
  '**/*.commands.ts',
  'packages/core/src/decider/**/*.ts',
  'packages/events/src/**/*.ts',
  'services/agent/src/guard/**/*.ts',
  'services/agent/src/turn/step-policy.ts',
  'services/tools/src/tool-calls/call-trigger.ts',
];

const otherServices = (service) =>
  SERVICES.filter((other) => other !== service).map((other) => ({
    group: [`@keel/${other}`, `@keel/${other}/*`],
    message: `services meet through proto contracts and events: ${service} may not import ${other}`,
  }));

/** The boundary blocks of the flat config, in order (later blocks override earlier ones per rule). */
export const boundaries = [
  {
    files: ['**/*.ts'],
    ignores: ['**/mongo-*.ts', 'packages/core/src/mongodb/**', ...TESTS],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'mongodb',
              message: 'only the MongoDB adapters (mongo-*.ts, core/src/mongodb) import mongodb',
            },
          ],
          patterns: [
            {
              group: ['@nats-io/*'],
              message: 'only the NATS adapters (packages/core/src/nats) import @nats-io/*',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['packages/core/src/nats/**/*.ts'],
    ignores: TESTS,
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'mongodb', message: 'only the MongoDB adapters import mongodb' }] },
      ],
    },
  },
  ...SERVICES.map((service) => ({
    files: [`services/${service}/src/**/*.ts`],
    ignores: [...TESTS, '**/mongo-*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'mongodb', message: 'only the MongoDB adapters (mongo-*.ts) import mongodb' }],
          patterns: [
            {
              group: ['@nats-io/*'],
              message: 'only the NATS adapters (packages/core/src/nats) import @nats-io/*',
            },
            ...otherServices(service),
          ],
        },
      ],
    },
  })),
  {
    files: DOMAIN_FILES,
    ignores: TESTS,
    rules: { 'no-restricted-imports': ['error', DOMAIN_FORBIDDEN] },
  },
];
