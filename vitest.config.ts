import { defineConfig } from 'vitest/config';

const conditions = ['@keel/source', 'node', 'import', 'default'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@keel/source'] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'packages/*/src/**/*.unit.spec.ts',
            'services/*/src/**/*.unit.spec.ts',
            'apps/*/src/**/*.unit.spec.ts',
            'proto/test/**/*.unit.spec.ts',
            'deploy/**/*.unit.spec.ts',
          ],
        },
      },
      {
        extends: true,
        test: {
          name: 'int',
          include: [
            'packages/*/src/**/*.int.spec.ts',
            'services/*/src/**/*.int.spec.ts',
            'apps/*/src/**/*.int.spec.ts',
          ],
          globalSetup: ['packages/testkit/src/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['e2e/**/*.spec.ts'],
          globalSetup: ['packages/testkit/src/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
