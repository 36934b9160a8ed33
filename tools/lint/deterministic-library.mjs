/**
 * ESLint rules for a library that must be pure: no I/O, no environment, no clock, no ambient
 * randomness (the engine, the fleet builders). `who` names the library in the messages.
 */
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

export function deterministicLibrary(who) {
  return {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: IO_MODULES.flatMap((name) => [name, `node:${name}`]).map((name) => ({
            name,
            message: `${who} does no I/O: the shells (CLI, services) read and write.`,
          })),
          patterns: [
            {
              group: ['@nestjs/*', 'kafkajs', 'redis', 'pg', 'kysely', 'express'],
              message: `${who} imports no framework or client.`,
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: `${who} reads no environment.` },
        { name: 'fetch', message: `${who} does no I/O.` },
        { name: 'setTimeout', message: `${who} is synchronous and deterministic.` },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: `${who} reads no clock: time is an input.` },
        { object: 'Math', property: 'random', message: `${who} is deterministic: use a seeded PRNG.` },
      ],
    },
  };
}
