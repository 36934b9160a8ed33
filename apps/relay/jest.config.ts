export default {
  displayName: 'relay',
  preset: '../../jest.preset.js',
  globalSetup: '<rootDir>/../../libs/testing/infra/src/global-setup.ts',
  globalTeardown: '<rootDir>/../../libs/testing/infra/src/global-teardown.ts',
};
