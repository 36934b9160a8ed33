import type { Config } from 'jest';
import { getJestProjectsAsync } from '@nx/jest';

/**
 * The whole test run (`npm test`): every project's tests in one jest invocation, so the real
 * Kafka, Redis and Postgres of the harness start once for all of them.
 */
export default async (): Promise<Config> => ({
  projects: await getJestProjectsAsync(),
  globalSetup: '<rootDir>/libs/testing/infra/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/infra/src/global-teardown.ts',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.base.json' }] },
  reporters: ['default', '<rootDir>/tools/jest/summary-line-reporter.js'],
  testTimeout: 60_000,
});
