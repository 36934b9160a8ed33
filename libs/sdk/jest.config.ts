export default {
  displayName: 'sdk',
  preset: '../../jest.preset.js',
};
