export default {
  displayName: 'testing-infra',
  preset: '../../../jest.preset.js',
  globalSetup: '<rootDir>/src/global-setup.ts',
  globalTeardown: '<rootDir>/src/global-teardown.ts',
};
