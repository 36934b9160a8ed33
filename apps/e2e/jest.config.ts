export default {
  displayName: 'e2e',
  preset: '../../jest.preset.js',
  globalSetup: '<rootDir>/../../libs/testing/infra/src/global-setup.ts',
  globalTeardown: '<rootDir>/../../libs/testing/infra/src/global-teardown.ts',
};
