/** The dashboard's tests: its pure modules, and the browser test (Chromium against a fake API). */
export default {
  displayName: 'dashboard',
  preset: '../../jest.preset.js',
};
