export default {
  displayName: 'generation-pool',
  preset: '../../jest.preset.js',
};
