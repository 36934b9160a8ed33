import baseConfig from '../../eslint.config.mjs';

/** The engine is a pure library: no I/O, no framework, no clock, no randomness. */
const IO_MODULES = [
  'fs',
  'fs/promises',
  'net',
  'http',
  'https',
  'http2',
  'dgram',
  'dns',
  'tls',
  'child_process',
  'cluster',
  'worker_threads',
  'readline',
  'process',
  'os',
  'vm',
  'inspector',
  'v8',
];

export default [
  ...baseConfig,
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: IO_MODULES.flatMap((name) => [name, `node:${name}`]).map((name) => ({
            name,
            message: 'The engine does no I/O: the shells (CLI, services) read and write.',
          })),
          patterns: [
            {
              group: ['@nestjs/*', 'kafkajs', 'redis', 'pg', 'express'],
              message: 'The engine imports no framework or client.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'The engine reads no environment.' },
        { name: 'fetch', message: 'The engine does no I/O.' },
        { name: 'setTimeout', message: 'The engine is synchronous and deterministic.' },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Time is an input of the engine, never read by it.' },
        { object: 'Math', property: 'random', message: 'The engine is deterministic.' },
      ],
    },
  },
];
