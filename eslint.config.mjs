import nx from '@nx/eslint-plugin';
import jest from 'eslint-plugin-jest';
import prettier from 'eslint-config-prettier';

/**
 * Project tags and what they may depend on:
 * - type:engine  — the pure generation library: no I/O, no framework.
 * - type:infra   — ports and adapters around a piece of infrastructure (messaging, store, cache).
 * - type:testing — test-only support (the real-infrastructure harness, fleet builders).
 * - type:app     — a deployable service or the CLI: a thin shell over the libraries.
 * - type:sdk     — `@policygen/sdk`, published to npm: the event contract and the consumer SDK; it
 *                  depends on registry packages only, so it installs outside this workspace.
 * - type:example — an example built on the SDK's public API alone, as a user's project would be.
 * - type:e2e     — the end-to-end and chaos tests (apps/e2e): they run the built services and the CLI
 *                  as processes, so they import no app, only the libraries and the test harness.
 */
const MAY_DEPEND_ON = {
  'type:sdk': ['type:sdk'],
  'type:engine': ['type:engine'],
  'type:infra': ['type:infra', 'type:engine', 'type:sdk'],
  'type:testing': ['type:testing', 'type:infra', 'type:engine', 'type:sdk'],
  'type:app': ['type:engine', 'type:infra', 'type:sdk'],
  'type:example': ['type:sdk'],
  'type:e2e': ['type:testing', 'type:infra', 'type:engine', 'type:sdk'],
};

/**
 * The services' entry points (`apps/<service>/src/index.ts`): only the CLI imports them, to run
 * every service in one process (`policygen start`). Nx forbids importing apps, so they are allowed
 * by name here, and the rule below keeps every other project from importing them.
 */
const SERVICE_ENTRIES = [
  '@policygen/config-service',
  '@policygen/generator-service',
  '@policygen/distribution-service',
  '@policygen/relay',
];

function moduleBoundaries(alsoAllowed = []) {
  return [
    'error',
    {
      enforceBuildableLibDependency: true,
      banTransitiveDependencies: true,
      allow: SERVICE_ENTRIES,
      depConstraints: Object.entries(MAY_DEPEND_ON).map(([sourceTag, tags]) => ({
        sourceTag,
        onlyDependOnLibsWithTags: [...new Set([...tags, ...alsoAllowed])],
      })),
    },
  ];
}

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  {
    ignores: ['**/dist', '**/node_modules', '**/coverage', '**/out', '**/tmp', '**/.nx'],
  },
  {
    files: ['**/*.ts', '**/*.js'],
    rules: { '@nx/enforce-module-boundaries': moduleBoundaries() },
  },
  {
    // Tests, and the helpers only tests import (src/testing), may also use the test-only libraries.
    files: ['**/*.spec.ts', '**/src/testing/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': moduleBoundaries(['type:testing']) },
  },
  {
    // The CLI's pipeline benchmark (apps/cli) provisions Kafka, Redis and Postgres and runs the services as the tests do.
    files: ['**/src/bench/pipeline/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': moduleBoundaries(['type:testing']) },
  },
  {
    files: ['libs/**/*.ts', 'apps/*-service/**/*.ts', 'apps/relay/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: SERVICE_ENTRIES.map((name) => ({ name, message: 'only the CLI composes the services' })) },
      ],
    },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['**/*.spec.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      ...jest.configs['flat/recommended'].rules,
      // Integration tests never skip silently: a disabled or focused test is an error.
      'jest/no-disabled-tests': 'error',
      'jest/no-focused-tests': 'error',
      // Helpers named expect… assert too (property-based tests call them inside fc.assert).
      'jest/expect-expect': ['warn', { assertFunctionNames: ['expect', 'expect*'] }],
    },
  },
  prettier,
];
