export default {
  displayName: 'testing-agent',
  preset: '../../../jest.preset.js',
};
