export default {
  displayName: 'testing-browser',
  preset: '../../../jest.preset.js',
};
