const { join } = require('node:path');
const { compilerOptions } = require('./tsconfig.base.json');

/** `@policygen/x` imports resolve to the library sources, as tsconfig.base.json maps them. */
const workspaceAliases = Object.fromEntries(
  Object.entries(compilerOptions.paths).map(([alias, targets]) => [
    `^${alias}$`,
    join(__dirname, String(targets[0])),
  ]),
);

/** The jest settings every project shares; a project's jest.config.ts names this as its preset. */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['**/?(*.)+(spec|test).ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json' }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: workspaceAliases,
  // Integration tests wait on real brokers and databases; every wait inside them has its own bound.
  testTimeout: 60_000,
};
