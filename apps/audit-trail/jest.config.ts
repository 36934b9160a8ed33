export default {
  displayName: 'audit-trail',
  preset: '../../jest.preset.js',
  globalSetup: '<rootDir>/../../libs/testing/infra/src/global-setup.ts',
  globalTeardown: '<rootDir>/../../libs/testing/infra/src/global-teardown.ts',
};
