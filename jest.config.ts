import type { Config } from 'jest';

/**
 * The whole test run (`npm test`): every project's tests in one jest invocation, so the real
 * Kafka, Redis and Postgres of the harness start once for all of them.
 */
const config: Config = {
  projects: [
    '<rootDir>/{apps,libs}/*/jest.config.ts',
    '<rootDir>/libs/*/*/jest.config.ts',
    '<rootDir>/tools/jest.config.ts',
  ],
  globalSetup: '<rootDir>/libs/testing/infra/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/infra/src/global-teardown.ts',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.base.json' }] },
  reporters: ['default', '<rootDir>/tools/jest/summary-line-reporter.js'],
  // A run-wide setting: the projects' preset value only counts when a project runs alone.
  testTimeout: 60_000,
};

export default config;
