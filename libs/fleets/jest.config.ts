export default {
  displayName: 'fleets',
  preset: '../../jest.preset.js',
};
