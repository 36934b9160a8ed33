export default {
  displayName: 'distribution',
  preset: '../../jest.preset.js',
};
