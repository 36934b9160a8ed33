export default {
  displayName: 'events',
  preset: '../../jest.preset.js',
};
