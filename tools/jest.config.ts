export default {
  displayName: 'tools',
  preset: '../jest.preset.js',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/../tsconfig.tools.json' }] },
};
