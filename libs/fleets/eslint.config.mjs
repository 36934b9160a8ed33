import baseConfig from '../../eslint.config.mjs';

/** Fleets are data: built in memory, deterministically, with no I/O, no clock and no ambient randomness. */
export default [
  ...baseConfig,
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['fs', 'fs/*', 'node:*'],
              message: 'A fleet builder does no I/O: the shells write fleets.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'A fleet builder reads no environment.' },
        { name: 'fetch', message: 'A fleet builder does no I/O.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Fleets are deterministic: no clock.' },
        { object: 'Math', property: 'random', message: 'Fleets are deterministic: use the seeded PRNG.' },
      ],
    },
  },
];
